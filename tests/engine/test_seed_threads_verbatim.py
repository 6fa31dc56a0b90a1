"""The seed threads' code blocks, character for character, on the engine's torch face
(``import torch`` giving :mod:`diffcompare.engine.torch`) and on PyTorch: one test per
block, comparing what each prints (numbers to a float tolerance, written the same way:
float32 printed as float32) and, where the thread shows its output, comparing with that.
"""
import pathlib

import pytest

from diffcompare import seeds as S

#: the threads, in the shared folder beside the repository (CI lays a copy there too)
SEEDS = pathlib.Path(__file__).resolve().parents[3] / "shared" / "seeds"

torch = pytest.importorskip("torch")


def rows(key):
    return S.compare_code(S.get_code(key))


def engine_out(rows_, source_start):
    return [r.engine for r in rows_ if r.source.lstrip().startswith(source_start)]


def differing(rows_):
    return [(r.source, r.engine, r.torch) for r in rows_ if r.same is False]


def only_known_differences(rows_):
    """Every row agrees but the ones ``KNOWN_CODE_DIFFERENCES`` explains."""
    bad = [(r.source, r.engine, r.torch) for r in rows_ if r.same is False and not r.note]
    assert not bad, bad


def test_every_block_is_the_threads_text_verbatim():
    if not SEEDS.is_dir():
        pytest.skip(f"the seed threads are not beside the repository ({SEEDS})")
    texts = {p.name[:3]: p.read_text(encoding="utf-8") for p in SEEDS.glob("*.txt")}
    for block in S.THREAD_CODE:
        assert block.code in texts[block.seed], block.key
    assert {b.seed for b in S.THREAD_CODE} == {"000", "001", "002"}   # 003's code is in images


def test_000_reciprocal_prints_what_the_thread_printed():
    r = rows("000-reciprocal")
    import diffcompare.engine.torch as face

    assert differing(r) == [("torch.__version__", repr(face.__version__), repr(torch.__version__))]
    for row in r:                         # every echoed value, as the thread printed it
        if row.source != "torch.__version__":
            assert S.same_output(row.engine, row.thread), row
    assert engine_out(r, "scalar_result") == ["", "tensor(0.2929, grad_fn=<MeanBackward0>)", ""]
    assert engine_out(r, "T.grad")[0].endswith("-0.0012, -0.0010])")
    assert r[4].source == "T" and r[4].engine == (
        "tensor([ 1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10.], requires_grad=True)")


def test_000_product_prints_what_the_thread_printed():
    r = rows("000-product")
    only_known_differences(r)
    assert len(differing(r)) == 1
    for row in r:
        if row.source != "torch.__version__":
            assert S.same_output(row.engine, row.thread), row
    shown = {row.source.split()[0]: row.engine for row in r if row.engine}
    assert shown["L"] == "tensor(3., grad_fn=<MeanBackward0>)"
    assert shown["y"] == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    assert shown["L.grad"] == "tensor(1.)" and shown["w.grad"] == "tensor([1.5000])"
    assert "x.grad" not in shown           # None: the REPL echoes nothing


def test_001_lin_grad_lines_run_on_both_and_equal_autograd():
    r = rows("001-lin-grad")
    assert differing(r) == []
    checks = [row.engine for row in r if row.part == "check" and row.engine]
    assert checks[2] == "tensor([0.5000, 0.5000])"              # b.g = out.g.sum(0): 4 × 1/8
    assert checks[1].splitlines()[0] == "tensor([[0.2750, 0.2750],"
    assert checks[-1] == "True True True"


def test_002_original_question():
    r = rows("002-original")
    assert differing(r) == []
    # y = x * 2**10 (the first power of two past norm 1000 for x = ones(3)): 1024 v
    assert r[-1].engine == r[-1].torch == "tensor([1.0240e+02, 1.0240e+03, 1.0240e-01])"


def test_002_example_1_float32_scientific_as_in_the_thread():
    r = rows("002-example-1")
    assert differing(r) == []
    prints = [row for row in r if row.source.startswith("print")]
    assert [row.engine for row in prints] == [row.thread for row in prints] == [
        "tensor([3.0000e-01, 3.0000e+00, 3.0000e-04])",
        "tensor([1.2000e+00, 1.6000e+01, 2.0000e-03])",
        "tensor([1.6667e-02, 1.4286e-01, 1.2500e-05])"]


def test_002_example_2_scalars():
    r = rows("002-example-2")
    assert differing(r) == []
    assert [row.engine for row in r if row.source.startswith("print")] == [
        "tensor(3.)", "tensor(4.)", "tensor(10.)"]


def test_002_example_3_pin_memory_refused_as_by_torch_without_an_accelerator():
    r = rows("002-example-3")
    assert differing(r) == []
    first = next(row for row in r if row.part == "thread")
    assert first.torch.startswith("RuntimeError: pin_memory=True requires")
    assert first.engine.startswith(first.torch) and "leave pin_memory out" in first.engine
    assert all(row.engine == "(not run: an earlier line failed)" for row in r[2:])


def test_002_example_4_accumulates():
    r = rows("002-example-4")
    assert differing(r) == []
    assert [row.engine for row in r if row.source.startswith("print")] == [
        "tensor(6.)", "tensor(8.)", "tensor(2.)"]


def test_002_variable_runs_until_data_zero_and_the_documented_fix_runs_through():
    r = rows("002-variable")
    first_diff = next(k for k, row in enumerate(r) if row.same is False)
    assert r[first_diff].source == "print(x.grad.data)"
    assert r[first_diff].engine == "[[2. 0. 0. 0.]]"                  # NumPy's print
    assert r[first_diff].torch == "tensor([[2., 0., 0., 0.]])"
    assert r[first_diff + 1].engine == "AttributeError: 'numpy.ndarray' object has no attribute 'zero_'"
    assert r[first_diff + 1].note                                        # documented
    # the fix the note gives: x.grad instead of x.grad.data
    fixed = S.ThreadCode("fixed", "002", "", S.get_code("002-variable").code.replace(".data", ""))
    fr = S.compare_code(fixed)
    assert differing(fr) == []
    assert [row.engine for row in fr if row.source.startswith("print")] == [
        "tensor([[2., 0., 0., 0.]])", "tensor([[0., 2., 0., 0.]])", "tensor([[2., 2., 2., 2.]])",
        "tensor([[2., 2., 2., 2.]])"]


def test_same_output_tolerates_rounding_but_not_dtype_or_format():
    assert S.same_output("tensor([0.2929])", "tensor([0.2930])")
    assert not S.same_output("tensor([0.2929])", "tensor([0.3929])")
    assert not S.same_output("tensor([0.5000])", "tensor([0.5000], dtype=torch.float64)")
    assert not S.same_output("tensor(3.)", "tensor(3.0000)")                 # int mode vs not
    assert not S.same_output("tensor([3.0000e-01])", "tensor([0.3000])")     # sci vs fixed
    assert S.same_output("RuntimeError: a b. What to do.", "RuntimeError: a b.")
    assert not S.same_output("TypeError: a b.", "RuntimeError: a b.")
