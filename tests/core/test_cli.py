"""CLI: bad input exits 2 with one clear line and no traceback; the capture job writes a run folder with a readable store."""

import subprocess
import sys

import pytest
import torch

from thinklens import HookedModel, Site
from thinklens.cli import main
from thinklens.engine.activation_store import ActivationStore
from thinklens.runs.folders import RunFolder


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "thinklens.cli", *args], capture_output=True, text=True,
                          env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})


def test_info(tiny_dirs, capsys):
    assert main(["info", str(tiny_dirs["gpt2"])]) == 0
    out = capsys.readouterr().out
    assert "family: gpt2" in out and "n_layers: 2" in out


@pytest.mark.parametrize("args,needle", [
    (["info", "/no/such/folder"], "bad model"),
    (["info", "tiny-thnik"], "did you mean 'tiny-think'"),
])
def test_bad_model_exit_2(args, needle):
    res = run_cli(*args)
    assert res.returncode == 2 and needle in res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_capture_job_writes_a_run_folder_and_resumes(tiny_dirs, tmp_path, capsys):
    model_dir = str(tiny_dirs["llama"])
    prompts = tmp_path / "p.txt"
    prompts.write_text("w1 w2 w3\n\nw4 w5\nw6\n")
    out = tmp_path / "runs" / "capture" / "c1"
    argv = ["run", "capture", "--model", model_dir, "--sites", "resid_post.*,final_norm", "--prompts", str(prompts),
            "--out", str(out), "--batch-size", "2", "--no-progress"]
    assert main(argv) == 0
    assert f"captured 6 rows at resid_post.0, resid_post.1, final_norm -> {(out / 'store').resolve()}" in capsys.readouterr().out
    run = RunFolder.open(out)
    assert run.config()["sites"] == ["resid_post.*", "final_norm"] and run.meta()["status"] == "done"
    summary = run.read_result("capture")
    assert summary["n_rows"] == 3 + 2 + 1 and summary["n_prompts"] == 3  # every real token of the three prompts
    assert summary["sites"] == ["resid_post.0", "resid_post.1", "final_norm"] and summary["store"] == "store"
    assert run.meta()["summary"] == summary
    store = ActivationStore(out / "store")
    assert len(store) == 6 and len(store.shards()) == 2  # one shard per batch of 2 prompts
    m = HookedModel.load(model_dir)
    ref = m.capture(["w1 w2 w3"], ["resid_post.1"])["resid_post.1"][0]
    got = next(store.iter_batches(3, sites=["resid_post.1"], with_meta=True))
    torch.testing.assert_close(got[Site("resid_post", 1)], ref, atol=1e-6, rtol=0)
    assert [r["pos"] for r in got["meta"]] == [0, 1, 2]
    # the same command resumes: nothing is written twice
    assert main(argv) == 0
    assert len(ActivationStore(out / "store")) == 6
    # a changed prompt file is refused on resume
    prompts.write_text("w1 w2\n")
    assert main(argv) == 2 and "prompts this run started with" in capsys.readouterr().err
    # the last prompt token only: its logical position is the prompt's length - 1
    last = tmp_path / "last"
    assert main([*argv[:-5], "--out", str(last), "--positions", "last", "--no-progress"]) == 0
    rows = next(ActivationStore(last / "store").iter_batches(8, with_meta=True))
    assert [r["pos"] for r in rows["meta"]] == [1]


def test_capture_job_errors_exit_2(tiny_dirs, tmp_path, capsys):
    model_dir = str(tiny_dirs["llama"])
    prompts = tmp_path / "p.txt"
    prompts.write_text("w1 w2 w3\nw4\n")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n")
    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text('{"prompt": "w1"}\n{oops\n')
    long = tmp_path / "long.txt"
    long.write_text(" ".join(["w1"] * 300) + "\n")
    cases = [
        (["--sites", "resid_pst.1", "--prompts", str(prompts)], "did you mean 'resid_post'"),
        (["--sites", "resid_post.9", "--prompts", str(prompts)], "0..1"),
        (["--sites", "resid_post.1", "--prompts", str(empty)], "at least one non-empty prompt"),
        (["--sites", "resid_post.1", "--prompts", str(bad_json)], "line 2"),
        (["--sites", "resid_post.1", "--prompts", str(tmp_path / "missing.txt")], "prompt file"),
        (["--sites", "resid_post.1", "--prompts", str(long)], "context"),
        (["--sites", "resid_post.1"], "a prompt file"),
        (["--sites", "resid_post.1", "--prompts", str(prompts), "--batch-size", "0"], "batch_size"),
    ]
    for k, (extra, needle) in enumerate(cases):
        assert main(["run", "capture", "--model", model_dir, "--out", str(tmp_path / f"o{k}"), "--no-progress", *extra]) == 2
        err = capsys.readouterr().err
        assert needle in err and len(err.strip().splitlines()) == 1, err


def test_argparse_error_one_line():
    res = run_cli("run", "capture", "--batch-size", "many")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1


def test_an_abbreviated_flag_is_refused_with_the_full_name(capsys):
    """argparse's abbreviations are off: --n-problem is a typo to name, not a prefix of --n-problems to guess."""
    with pytest.raises(SystemExit) as e:
        main(["run", "eval", "--model", "tiny-cot", "--n-problem", "3", "--no-progress"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "--n-problem 3" in err and "did you mean '--n-problems'" in err
    assert len(err.strip().splitlines()) == 1
