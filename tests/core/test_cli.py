"""CLI: bad input exits 2 with one clear line and no traceback; capture writes a readable store."""

import subprocess
import sys

import pytest
import torch

from thinklens import HookedModel
from thinklens.cli import main
from thinklens.store import ActivationStore


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


def test_capture_roundtrip_and_errors(tiny_dirs, tmp_path, capsys):
    model_dir = str(tiny_dirs["llama"])
    prompts = tmp_path / "p.txt"
    prompts.write_text("w1 w2 w3\n\nw4 w5\nw6\n")
    out = tmp_path / "store"
    assert main(["capture", model_dir, "--sites", "resid_post.1,final_norm", "--prompts", str(prompts), "--out", str(out),
                 "--batch-size", "2", "--no-progress"]) == 0
    store = ActivationStore(out)
    assert len(store) == 3 + 2 + 1  # every real token of the three prompts
    m = HookedModel.load(model_dir)
    ref = m.capture(["w1 w2 w3"], ["resid_post.1"])["resid_post.1"][0]
    got = next(store.iter_batches(3, sites=["resid_post.1"]))
    torch.testing.assert_close(got[next(iter(got))], ref, atol=1e-6, rtol=0)
    # re-running resumes: nothing is written twice
    assert main(["capture", model_dir, "--sites", "resid_post.1,final_norm", "--prompts", str(prompts), "--out", str(out),
                 "--batch-size", "2", "--no-progress"]) == 0
    assert len(ActivationStore(out)) == 6
    capsys.readouterr()
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
    ]
    for extra, needle in cases:
        assert main(["capture", model_dir, "--out", str(tmp_path / "o2"), "--no-progress", *extra]) == 2
        err = capsys.readouterr().err
        assert needle in err and len(err.strip().splitlines()) == 1, err


def test_argparse_error_one_line():
    res = run_cli("capture")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
