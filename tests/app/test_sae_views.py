"""thinklens's SAE against SAELens's on the same activations, as the Features page shows it: the numbers side by side
with their intervals (those the run stores; the rest say so), the random-decoder control, one feature's top contexts
from each SAE (SAELens's nearest feature by decoder direction, recomputed on request and checked against the run's
stored contexts) and the dead and dense features. On a quick ``validate --model tiny-think --methods sae-real`` run and
on the committed real-weight record."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch
from real_view_runs import need_zoo, validate_sae_run

from app import sae_views as sv

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "app" / "pages" / "7_Features.py")
VALIDATION = str(ROOT / "app" / "pages" / "8_Validation.py")
RECORD = "validate-real-smollm2-steering"


@pytest.fixture(scope="module")
def sae_run(tmp_path_factory):
    need_zoo()
    root = tmp_path_factory.mktemp("sae-vs-saelens") / "runs"
    path = validate_sae_run(root)
    return root, path, json.loads((path / "results" / "validate.json").read_text())


def test_the_table_is_the_runs_numbers_with_their_intervals(sae_run):
    _, _, doc = sae_run
    d = sv.details_of(doc)
    rows = {r["metric"]: r for r in sv.metric_rows(doc)}
    ev = rows["explained variance"]
    assert (ev["thinklens"], ev["SAELens"]) == (d["ev_thinklens"], d["ev_saelens"])
    assert ev["thinklens 95%"] == f"[{d['ev_thinklens_ci'][0]:.3f}, {d['ev_thinklens_ci'][1]:.3f}]"
    ce = rows["CE loss recovered"]
    assert ce["SAELens"] == d["saelens"]["ce_loss_recovered"]
    assert ce["SAELens 95%"] == f"[{d['saelens']['ce_loss_recovered_ci'][0]:.3f}, {d['saelens']['ce_loss_recovered_ci'][1]:.3f}]"
    dead = rows["dead features (fraction of latents)"]
    assert (dead["thinklens"], dead["SAELens"]) == (d["thinklens"]["dead_fraction"], d["saelens"]["dead_fraction"])
    assert dead["thinklens 95%"] == dead["SAELens 95%"] == sv.NOT_STORED  # no interval stored, none made up
    dense = next(r for m, r in rows.items() if m.startswith("dense"))
    assert dense["thinklens"] == dense["SAELens"] == sv.NOT_STORED
    planted = sv.settings_of(doc)["planted"]
    assert f"{planted['value']:.4f} [{planted['ci'][0]:.4f}, {planted['ci'][1]:.4f}]" in sv.gap_line(doc)


def test_the_figure_draws_the_stored_intervals_and_no_other(sae_run):
    _, _, doc = sae_run
    d = sv.details_of(doc)
    ev, ce, dead = sv.figure_fidelity(doc).data
    assert list(ev.y) == [d["ev_thinklens"], d["ev_saelens"], d["ev_random_decoder"]]
    for i, key in enumerate(("ev_thinklens_ci", "ev_saelens_ci", "ev_random_decoder_ci")):
        assert ev.y[i] - ev.error_y.arrayminus[i] == pytest.approx(d[key][0])
        assert ev.y[i] + ev.error_y.array[i] == pytest.approx(d[key][1])
    assert ce.y[1] + ce.error_y.array[1] == pytest.approx(d["saelens"]["ce_loss_recovered_ci"][1])
    assert list(dead.error_y.array) == [0.0, 0.0] and dead.error_y.visible is False  # none stored, none drawn


def test_stored_contexts_parse_back_to_the_stored_lines(sae_run):
    _, _, doc = sae_run
    lines = sv.details_of(doc)["contexts_thinklens"]
    parsed = sv.stored_features(doc)
    assert len(parsed) == len(lines) > 0
    for line, f in zip(lines, parsed):
        rebuilt = " | ".join(f"{b}[{t}]" for b, t in f["contexts"])
        assert line == f"feature {f['feature']} ({f['active']} active): {rebuilt}"


def test_nearest_feature_against_a_loop():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(6, 5, generator=g), torch.randn(9, 5, generator=g)
    b[4] = 3 * a[2] + 0.01 * torch.randn(5, generator=g)  # the same direction at another norm
    got, cos = sv.nearest_feature(a, b, 2)
    loop = [float(torch.dot(a[2], b[j]) / (a[2].norm() * b[j].norm())) for j in range(9)]
    assert got == max(range(9), key=loop.__getitem__) == 4 and cos == pytest.approx(loop[4], abs=1e-6)


def test_recomputed_contexts_and_dead_features_are_the_runs(sae_run):
    _, path, doc = sae_run
    from thinklens.engine.model import HookedModel

    f = sv.stored_features(doc)[0]
    got = sv.recompute(HookedModel.load(doc["model"]), doc, path, f["feature"])
    assert sv.contexts_match(f, got["contexts"]["thinklens"]) and got["active"]["thinklens"] == f["active"]
    d = sv.details_of(doc)
    for row in sv.density_rows(got, doc):  # dead counted as the run counts them, on all held-out states
        assert row["dead fraction"] == pytest.approx(row["dead fraction (run)"])
    assert got["rows"]["generated"] == d["held_out_generated_rows"] and got["rows"]["all"] == d["held_out_rows"]
    assert got["pair"]["saelens"] == sv.nearest_feature(*_decoders(path), f["feature"])[0]
    assert {len(got["contexts"][arm]) for arm, _ in sv.ARMS} == {3}
    sv.figure_density(got)


def _decoders(path: Path) -> tuple[torch.Tensor, torch.Tensor]:
    from thinklens.steering.sae import load_sae

    folders = sv.sae_folders(path)
    return tuple(load_sae(str(folders[arm])).W_dec.detach() for arm, _ in sv.ARMS)


def test_the_committed_record_draws_without_saes():
    doc = json.loads((ROOT / "results" / "records" / RECORD / "results" / "validate.json").read_text())
    assert sv.has_comparison(doc) and doc["model"] == "smollm2-135m"
    sv.figure_fidelity(doc)
    assert len(sv.stored_features(doc)) == 5 and sv.sae_folders(None) == {}
    found = sv.comparisons(Path("/nonexistent"), {RECORD: doc, "other": {"rows": []}})
    assert [(c.record, c.path) for c in found] == [(RECORD, None)]


def test_the_features_page_opens_the_comparison_and_recomputes(sae_run, monkeypatch):
    from streamlit.testing.v1 import AppTest

    root, _, doc = sae_run
    monkeypatch.setenv("THINKLENS_RUNS", str(root))
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.query_params.update({"kind": "validate", "run": "sae"})
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="saelens-source").value == 0  # the run named by the link (the record after it)
    specs = [c.proto.spec for c in at.get("plotly_chart")]
    assert sum("thinklens's SAE against SAELens's on the same activations (tiny-think" in s for s in specs) == 1
    assert any("not stored" in str(df.value.values) for df in at.dataframe)
    f = sv.stored_features(doc)[0]
    task = f"saelens-contexts-sae-{f['feature']}"
    next(b for b in at.button if b.key == f"btn-{task}").click().run()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 120 and not any("Recomputed contexts" in c.value for c in at.caption):
        time.sleep(0.3)
        at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(c.value.startswith(f"Recomputed contexts of thinklens's feature {f['feature']} match") for c in at.caption)
    assert any("Feature firing density" in c.proto.spec for c in at.get("plotly_chart"))
    assert sum(m.value.count('class="tl-sae-ctx"') for m in at.markdown) == 9  # stored 3, then 3 from each


def test_the_record_opens_by_its_name_and_says_what_it_lacks(monkeypatch, tmp_path):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("THINKLENS_RUNS", str(tmp_path))
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.query_params["record"] = RECORD
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("smollm2-135m" in c.proto.spec for c in at.get("plotly_chart"))
    assert any("keeps neither SAE" in i.value for i in at.info)
    assert not at.button  # nothing to recompute without the SAEs


def test_the_validation_page_links_the_comparison(sae_run, monkeypatch):
    from streamlit.testing.v1 import AppTest

    root, _, _ = sae_run
    monkeypatch.setenv("THINKLENS_RUNS", str(root))
    at = AppTest.from_file(VALIDATION, default_timeout=180)
    at.query_params["run"] = "sae"
    at.run()
    assert not at.exception
    links = [m.value for m in at.markdown if "as pictures (Features page)" in m.value]
    assert any("(/Features?kind=validate&run=sae)" in v for v in links), links
    assert any(f"(/Features?record={RECORD})" in v for v in links), links
