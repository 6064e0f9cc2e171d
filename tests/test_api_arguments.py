"""Issue 29 item 11: the Python API checks its arguments at the public boundary (commsim.runs.arguments)
and raises commsim's own InputError naming the parameter -- never an AttributeError or TypeError from deep
inside the pipeline.  Hypothesis draws junk for each parameter of each entry point."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import commsim
from commsim import InputError


class RaisingGetattr:
    """A model object whose __getattr__ raises something other than AttributeError."""

    def __getattr__(self, name):
        raise RuntimeError(f"no {name} here")


JUNK = [None, 5, -1, 2.5, True, object(), b"index-idxl", [], {}, (1, 2), RaisingGetattr()]

CALLS = {
    "reduction": lambda v: commsim.run(v, "memorize", n=4),
    "model": lambda v: commsim.run("index-idxl", v, n=4),
    "progress": lambda v: commsim.run("index-idxl", "memorize", n=4, progress=v),
    "audit": lambda v: commsim.run("index-idxl", "memorize", n=4, audit=v),
    "certify": lambda v: commsim.run("index-idxl", "memorize", n=4, certify=v),
    "sample": lambda v: commsim.sample(v, n=4),
    "vocabulary": lambda v: commsim.vocabulary(v),
    "reductions": lambda v: commsim.sweep(v, "memorize", n=4),
    "models": lambda v: commsim.sweep("index-idxl", v, n=4),
    "n": lambda v: commsim.sweep("index-idxl", "memorize", n=v),
    "write": lambda v: commsim.sweep("index-idxl", "memorize", n=4, write=v),
    "extra_modules": lambda v: commsim.load_plugins(v),
}
#: junk that is a valid value of a parameter (None: the default model, no progress; True: a progress bar; no
#: plugins; 5 for n)
VALID = {("model", "None"), ("progress", "None"), ("progress", "True"), ("write", "None"), ("models", "None"), ("n", "None"),
         ("audit", "False"), ("certify", "True"), ("n", "5"), ("extra_modules", "[]"), ("extra_modules", "()"),
         ("models", "[]")}


#: the named wrong values of the parametrized test (pytest reads ``__name__`` of parameters: none are passed)
NAMED = {"None": None, "5": 5, "object": object(), "getattr": RaisingGetattr(), "empty": "", "2.5": 2.5}


@pytest.mark.parametrize("call, value", [
    ("reduction", "None"), ("reduction", "5"), ("reduction", "object"),
    ("model", "5"), ("model", "getattr"), ("model", "empty"),
    ("progress", "5"), ("sample", "None"), ("vocabulary", "None"),
    ("reductions", "None"), ("models", "5"), ("write", "5"), ("n", "2.5"),
])
def test_a_wrong_argument_is_an_input_error_naming_it(call, value):
    param = {"sample": "reduction", "vocabulary": "reduction", "reductions": "reductions"}.get(call, call)
    with pytest.raises(InputError) as caught:
        CALLS[call](NAMED[value])
    assert caught.value.param == param and param in str(caught.value)


def test_load_plugins_takes_one_name_as_a_module_not_its_characters():
    with pytest.raises(InputError, match="'nosuch'") as caught:
        commsim.load_plugins("nosuch")
    assert caught.value.param == "plugin"
    with pytest.raises(InputError) as caught:
        commsim.load_plugins(5)
    assert caught.value.param == "extra_modules"
    assert commsim.load_plugins([]).names("reduction")


def test_a_getattr_that_raises_is_named_not_escaped():
    with pytest.raises(InputError, match="__getattr__ must raise AttributeError") as caught:
        commsim.run("index-idxl", RaisingGetattr(), n=4)
    assert caught.value.param == "model"


@settings(max_examples=60, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(CALLS)), st.sampled_from(range(len(JUNK))))
def test_junk_for_any_parameter_is_an_input_error_or_a_valid_value(call, index):
    value = JUNK[index]
    try:
        CALLS[call](value)
    except InputError:
        return
    assert (call, repr(value)) in VALID, f"{call}={value!r} was accepted"


# ---- instances: "all" as the command line and the report spell it; a sample larger than the instances says so ----
@pytest.mark.parametrize("value", ["all", "ALL", " all "])
def test_instances_all_is_every_instance_as_on_the_command_line(value):
    every = commsim.run("index-idxl", "memorize:capacity=3", n=4, instances=value, certify=False)   # main: refused
    assert every.to_dict() == commsim.run("index-idxl", "memorize:capacity=3", n=4, certify=False).to_dict()
    assert (every.instances, every.instances_run) == ("all", 4 * 16)


def test_instances_other_text_is_refused_naming_it():
    with pytest.raises(InputError, match="'all' or a number of instances") as caught:
        commsim.run("index-idxl", "memorize", n=4, instances="some")
    assert caught.value.param == "instances"


@settings(max_examples=12, deadline=None, database=None)
@given(st.integers(1, 200))
def test_a_sample_says_when_it_must_repeat_instances(count):
    """n = 4: 64 distinct instances; a sample of fewer is drawn, one of at least that many would only repeat them:
    every instance runs once instead, and the description says so."""
    report = commsim.run("index-idxl", "memorize:capacity=3", n=4, instances=count, seed=1, certify=False)
    if count < 64:
        assert report.instances_run == count and report.instances == f"{count} sampled (seed 1)"
    else:
        assert report.instances_run == 64 and f"each once, since {count} samples would only repeat the 64 distinct " \
            "instances" in report.instances


# ---- argument errors name the argument that is wrong -----------------------------------------------------------
def _parts():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    return {"embedding": torch.nn.Embedding(8, 4), "core": torch.nn.GRU(4, 2, batch_first=True),
            "head": torch.nn.Linear(2, 2)}


@pytest.mark.parametrize("keywords, param, says", [
    ({"precision": 2, "frac": 2}, "frac", "fraction bits must be 0..1, got 2"),        # main: param=precision
    ({"precision": 1, "frac": 0}, "precision", "width must be 2..53"),
    ({"precison": 2}, "precison", "did you mean 'precision'?"),                         # main: a raw TypeError
    ({"instances": 8, "sead": 1}, "sead", "valid keywords: n, precision, frac, dtype, decision, instances, seed"),
])
def test_run_names_the_wrong_keyword(keywords, param, says):
    with pytest.raises(InputError) as caught:
        commsim.run("index-idxl", _parts(), n=4, certify=False, **keywords)
    assert caught.value.param == param and says in str(caught.value)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_dtype_takes_a_torch_dtype_as_its_name(dtype):
    torch = pytest.importorskip("torch")
    by_name = commsim.make_model(_parts(), vocab_size=8, dtype=dtype)
    by_torch = commsim.make_model(_parts(), vocab_size=8, dtype=getattr(torch, dtype))   # main: "unknown float dtype"
    assert by_torch.format.name == by_name.format.name == dtype
    report = commsim.run("index-idxl", _parts(), n=4, instances=8, certify=False, dtype=getattr(torch, dtype))
    assert report.bits_used == 2 * 16
    with pytest.raises(InputError, match="unknown float dtype 'int8'") as caught:
        commsim.make_model(_parts(), vocab_size=8, dtype=torch.int8)
    assert caught.value.param == "dtype"


def test_sweep_names_the_wrong_entry_of_a_list():
    core = _parts()["core"]
    with pytest.raises(InputError) as caught:
        commsim.sweep("index-idxl", ["memorize", core], n=4)
    message = str(caught.value)
    assert caught.value.param == "models" and message.startswith("models[1] must be a model spec pattern")
    assert "GRU(4, 2, batch_first=True)" in message and "commsim.run" in message and "list object" not in message
    with pytest.raises(InputError, match=r"reductions\[0\] must be a reduction id.*got 5$"):
        commsim.sweep([5], "memorize", n=4)
