"""``thinklens run validate --model smollm2-135m --quick``: the known effects recovered on real weights, the nulls not."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.real


def test_induction_quick_on_smollm2(real_model, tmp_path):
    import thinklens

    model = real_model("smollm2-135m")
    from thinklens.calibration import validate

    result = thinklens.run_job("validate", model="smollm2-135m", quick=True, methods=("induction",), runs=str(tmp_path),
                               run_id="v", progress=False)
    rows = {r["setting"]: r for r in result.value["rows"]}
    assert {k: r["verdict"] for k, r in rows.items()} == {"planted": "recovered", "null": "no-effect",
                                                         "planted-heads": "recovered", "null-random-heads": "no-effect"}
    assert result.value["model_source"]["gguf_sha256"] == model.source["gguf_sha256"]
    assert result.value["validated"] == 4 and validate.report(result.value).endswith("validated=4/4")
