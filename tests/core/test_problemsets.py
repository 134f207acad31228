"""Problem sets from files of every format, datasets folders, the hub cache and the synthetic task; splits."""

from __future__ import annotations

import csv
import doctest
import importlib
import json

import pytest

from thinklens.data.problemsets import ProblemSet, check_disjoint, load_problems, parse_mapping
from thinklens.errors import ThinklensError
from thinklens.tasks.protocol import HELD_OUT, problems_by_steps

GSM8K = [
    {"question": "Natalia sold clips to 48 friends in April, and half as many in May. How many in all?",
     "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips.\n#### 72"},
    {"question": "A house costs $1,000,000 and rises by $450,000. What is it worth?",
     "answer": "It is worth 1000000+450000 = <<1000000+450000=1450000>>1,450,000.\n#### 1,450,000"},
]
MATH500 = [
    {"problem": "Convert the point $(0,3)$ in rectangular coordinates to polar coordinates.",
     "solution": "We have $r = 3$ ... so $\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}$.",
     "answer": "\\left( 3, \\frac{\\pi}{2} \\right)", "subject": "Precalculus", "level": 2,
     "unique_id": "test/precalculus/807.json"},
    {"problem": "Who has the greatest average speed?", "solution": "... $\\boxed{\\text{Evelyn}}$.",
     "answer": "\\text{Evelyn}", "subject": "Algebra", "level": 2, "unique_id": "test/algebra/1349.json"},
    {"problem": "Find $x$ if $3x = 14$.", "solution": "$x = \\boxed{\\frac{14}{3}}$", "answer": "\\frac{14}{3}",
     "subject": "Algebra", "level": 1, "unique_id": "test/algebra/1.json"},
]
AIME = [
    {"ID": "2024-I-1", "Problem": "Every morning Aya goes for a walk ... Find the number of minutes.", "Solution": "...", "Answer": 204},
    {"ID": "2024-I-2", "Problem": "There exist real numbers x and y ... Find xy.", "Solution": "...", "Answer": 25},
]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _parquet(path, rows):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def _csv(path, rows):
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_gsm8k_jsonl_gold_is_the_number_after_the_marker(tmp_path):
    ps = load_problems(_jsonl(tmp_path / "gsm8k_test.jsonl", GSM8K))
    assert isinstance(ps, ProblemSet) and len(ps) == 2 and not ps.is_synthetic
    assert ps.answers == ["72", "1,450,000"] and [p.integer_answer for p in ps] == [72, 1450000]
    assert ps[0].solution.endswith("#### 72") and ps[0].id == "gsm8k_test-0" and ps[0].metadata == {}
    assert ps[1].is_correct("so the house is worth \\boxed{1450000}") and not ps[1].is_correct("#### 1450")


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "json", "json-columns", "json-wrapped"])
def test_math500_in_every_file_format(tmp_path, fmt):
    if fmt == "jsonl":
        path = _jsonl(tmp_path / "math500.jsonl", MATH500)
    elif fmt == "parquet":
        path = _parquet(tmp_path / "math500.parquet", MATH500)
    else:
        path = tmp_path / "math500.json"
        data = {"data": MATH500} if fmt == "json-wrapped" else MATH500
        if fmt == "json-columns":
            data = {k: [r[k] for r in MATH500] for k in MATH500[0]}
        path.write_text(json.dumps(data))
    ps = load_problems(path)
    assert [p.id for p in ps] == [r["unique_id"] for r in MATH500]
    assert ps.answers == [r["answer"] for r in MATH500] and ps.questions[2].startswith("Find $x$")
    assert ps[0].metadata == {"subject": "Precalculus", "level": 2} and "boxed" in ps[0].solution
    assert ps[2].integer_answer is None and ps[2].is_correct("\\boxed{\\dfrac{14}{3}}")


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_aime_capitalised_fields(tmp_path, fmt):
    path = (_csv if fmt == "csv" else _parquet)(tmp_path / f"aime.{fmt}", AIME)
    ps = load_problems(path)
    assert [p.id for p in ps] == ["2024-I-1", "2024-I-2"] and ps.answers == ["204", "25"]
    assert ps[0].question.startswith("Every morning") and ps[0].solution == "..."
    lower = load_problems(_jsonl(tmp_path / "aime_lower.jsonl", [{k.lower(): v for k, v in r.items()} for r in AIME]))
    assert lower.answers == ["204", "25"]


def test_math_train_without_answer_field_takes_the_last_box(tmp_path):
    rows = [{"problem": "What is 1/2 + 1/4?", "solution": "First $\\boxed{2}$ no... it is $\\boxed{\\frac{3}{4}}$.", "type": "Algebra"}]
    ps = load_problems(_jsonl(tmp_path / "math_train.jsonl", rows))
    assert ps.answers == ["\\frac{3}{4}"] and ps[0].metadata == {"type": "Algebra"}


def test_mapping_overrides_field_names(tmp_path):
    path = _jsonl(tmp_path / "own.jsonl", [{"prompt_text": "2+2?", "target": "4", "rationale": "2+2=4", "idx": 7}])
    ps = load_problems(path, mapping="question=prompt_text,answer=target,id=idx")
    assert (ps[0].question, ps[0].answer, ps[0].solution, ps[0].id) == ("2+2?", "4", "2+2=4", "7")
    assert load_problems(path, mapping={"question": "prompt_text", "answer": "target"}).answers == ["4"]
    assert parse_mapping(None) == {} and parse_mapping("question=q") == {"question": "q"}


def test_missing_field_says_which_fields_exist_and_how_to_map(tmp_path):
    path = _jsonl(tmp_path / "own.jsonl", [{"prompt_text": "2+2?", "target": "4"}])
    with pytest.raises(ThinklensError, match=r"no question field.*prompt_text, target.*question=<field>"):
        load_problems(path)
    with pytest.raises(ThinklensError, match=r"no answer field.*answer=<field>"):
        load_problems(path, mapping="question=prompt_text")
    with pytest.raises(ThinklensError, match=r"one of its fields: prompt_text, target.*did you mean 'target'"):
        load_problems(path, mapping="question=prompt_text,answer=targt")
    with pytest.raises(ThinklensError, match="did you mean 'question'"):
        load_problems(path, mapping="questoin=prompt_text")
    with pytest.raises(ThinklensError, match="field=column pairs"):
        parse_mapping("question")


def test_bad_rows_and_files(tmp_path):
    with pytest.raises(ThinklensError, match="existing .jsonl"):
        load_problems(tmp_path / "nope.jsonl")
    (tmp_path / "data.txt").write_text("hello\n")
    with pytest.raises(ThinklensError, match=r"data file format.*\.jsonl, \.json, \.parquet, \.csv"):
        load_problems(tmp_path / "data.txt")
    (tmp_path / "bad.jsonl").write_text('{"question": "a", "answer": "1"}\n{oops\n')
    with pytest.raises(ThinklensError, match=r"bad.jsonl:2"):
        load_problems(tmp_path / "bad.jsonl")
    _jsonl(tmp_path / "empty_answer.jsonl", [{"question": "a", "answer": "1"}, {"question": "b", "answer": ""}])
    with pytest.raises(ThinklensError, match="row 1"):
        load_problems(tmp_path / "empty_answer.jsonl")
    (tmp_path / "scalar.json").write_text("3")
    with pytest.raises(ThinklensError, match="list of objects"):
        load_problems(tmp_path / "scalar.json")
    with pytest.raises(ThinklensError, match="limit"):
        load_problems(_jsonl(tmp_path / "ok.jsonl", GSM8K), limit=0)
    assert len(load_problems(tmp_path / "ok.jsonl", limit=1)) == 1


def test_datasets_save_to_disk_folders(tmp_path):
    import datasets

    datasets.Dataset.from_list(MATH500).save_to_disk(str(tmp_path / "math500"))
    assert load_problems(tmp_path / "math500").answers == [r["answer"] for r in MATH500]
    both = datasets.DatasetDict({"train": datasets.Dataset.from_list(GSM8K[:1]), "test": datasets.Dataset.from_list(GSM8K)})
    both.save_to_disk(str(tmp_path / "gsm8k"))
    assert load_problems(tmp_path / "gsm8k").answers == ["72", "1,450,000"]  # test by default
    assert load_problems(tmp_path / "gsm8k", split="train").answers == ["72"]
    assert load_problems(f"{tmp_path / 'gsm8k'}@train").answers == ["72"]
    with pytest.raises(ThinklensError, match="one of train, test"):
        load_problems(tmp_path / "gsm8k", split="validation")


def _fake_hub_cache(root):
    """A hub cache holding openai/gsm8k as the hub lays it out (main/ and socratic/ configs, parquet shards)."""
    repo = root / "datasets--openai--gsm8k"
    snap = repo / "snapshots" / ("a" * 40)
    for config in ("main", "socratic"):
        (snap / config).mkdir(parents=True)
        _parquet(snap / config / "test-00000-of-00001.parquet", GSM8K)
        _parquet(snap / config / "train-00000-of-00001.parquet", GSM8K[:1])
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("a" * 40)
    return root


def test_hub_id_from_the_local_cache_only(tmp_path):
    cache = _fake_hub_cache(tmp_path / "hub")
    assert load_problems("openai/gsm8k:main", cache_dir=cache).answers == ["72", "1,450,000"]
    assert load_problems("openai/gsm8k:main@train", cache_dir=cache).answers == ["72"]
    with pytest.raises(ThinklensError, match="several hold data .*main.*socratic.*ID:config"):
        load_problems("openai/gsm8k", cache_dir=cache)
    with pytest.raises(ThinklensError, match="local Hugging Face cache.*hf download"):
        load_problems("HuggingFaceH4/MATH-500", cache_dir=cache)


def test_synthetic_source_keeps_ground_truth_on_held_out_seeds():
    ps = load_problems("synthetic:2-4:5")
    expected = problems_by_steps(5, 2, 4, seed=HELD_OUT["eval"])
    assert len(ps) == 15 and ps.is_synthetic and [p.ground_truth for p in ps] == expected
    assert [p.answer for p in ps] == [str(p.answer) for p in expected] and ps[0].solution == expected[0].cot
    assert len({p.id for p in ps}) == 15 and [p.metadata["n_steps"] for p in ps][::5] == [2, 3, 4]
    assert load_problems("synthetic:3").is_synthetic and len(load_problems("synthetic:3")) == 100
    assert load_problems("synthetic:2-2:3", seed=7)[0].ground_truth == problems_by_steps(3, 2, 2, seed=7)[0]
    for bad in ("synthetic:", "synthetic:4-2", "synthetic:a-b"):
        with pytest.raises(ThinklensError):
            load_problems(bad)


def test_splits_are_seeded_disjoint_and_complete():
    ps = load_problems("synthetic:2-4:20")
    parts = ps.split({"train": 0.6, "calibration": 0.2, "test": 0.2}, seed=0)
    assert [len(p) for p in parts.values()] == [36, 12, 12]
    ids = [p.id for part in parts.values() for p in part]
    assert sorted(ids) == sorted(p.id for p in ps) and len(set(ids)) == len(ps)
    again = ps.split({"train": 0.6, "calibration": 0.2, "test": 0.2}, seed=0)
    assert all(parts[k].problems == again[k].problems for k in parts)
    other = ps.split({"train": 0.6, "calibration": 0.2, "test": 0.2}, seed=1)
    assert parts["test"].problems != other["test"].problems
    counts = ps.split({"train": 10, "test": 5}, seed=0)
    assert [len(p) for p in counts.values()] == [10, 5]
    order = [p.id for p in ps]
    assert [p.id for p in counts["train"]] == sorted((p.id for p in counts["train"]), key=order.index)  # source order kept
    with pytest.raises(ThinklensError, match="at most 60"):
        ps.split({"train": 50, "test": 20}, seed=0)
    with pytest.raises(ThinklensError, match="size of split"):
        ps.split({"train": 1.5}, seed=0)


def test_duplicate_questions_stay_in_one_split_and_overlap_is_an_error(tmp_path):
    rows = [{"question": f"Q{i}", "answer": str(i)} for i in range(10)] + [{"question": "  q3 ", "answer": "3"}]
    ps = load_problems(_jsonl(tmp_path / "dups.jsonl", rows))
    parts = ps.split({"train": 0.5, "test": 0.5}, seed=3)
    homes = {name for name, part in parts.items() for p in part if p.question.strip().lower() == "q3"}
    assert len(homes) == 1
    train, test = load_problems(_jsonl(tmp_path / "a.jsonl", rows[:6])), load_problems(_jsonl(tmp_path / "b.jsonl", rows[5:]))
    with pytest.raises(ThinklensError, match="2 questions in both train and test.*allow_overlap=True"):
        check_disjoint({"train": train, "test": test})
    check_disjoint({"train": train, "test": test}, allow_overlap=True)
    check_disjoint({"train": train.take(5), "test": load_problems(_jsonl(tmp_path / "c.jsonl", rows[5:10]))})


@pytest.mark.parametrize("name", ["thinklens.data.problemsets", "thinklens.data.sources", "thinklens.data.answers",
    "thinklens.data.equivalence"])
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
