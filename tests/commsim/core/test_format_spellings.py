"""Every spelling of a number format parses, through the one parser, to the same NumberFormat; conflicting
spellings are refused naming the argument at fault -- as keywords, as a spec's keys, as make_model's and as
commsim.run's keywords."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import commsim
from commsim.budget.number_format import format_of
from commsim.core.errors import InputError
from commsim.core.precision import FLOAT_DTYPES, FixedPoint, FloatFormat, FormatError, parse_format
from commsim.plugins import make_model
from commsim.spec import ModelSpec

FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class TorchDtype:
    """Stands for a torch dtype without importing torch: its module is ``torch`` and it prints ``torch.NAME``."""

    __module__ = "torch"

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"


fixed_formats = st.integers(2, 53).flatmap(lambda p: st.builds(FixedPoint, st.just(p), st.integers(0, p - 1)))
float_formats = st.sampled_from(FLOAT_DTYPES).map(FloatFormat)
padding = st.sampled_from(["", " ", "  "])


def _spec_format(keys: str):
    """The format a spec with these keys names (its own error prefixed by the spec, param ``model``)."""
    spec = ModelSpec.parse(f"elman:{keys}", ["elman"])
    return spec.format()


def fixed_spellings(fmt: FixedPoint, pad: str) -> list:
    """Every way to write ``fmt``: the object, its name (any case, padded), precision+frac as ints and text, the
    spec's keys, and -- when frac is the default P // 2 -- P alone as an int, as text and as ``fixedP``."""
    p, f = fmt.bits, fmt.frac
    out = [parse_format(fmt), parse_format(fmt.name), parse_format(pad + fmt.name.upper() + pad),
           parse_format(precision=fmt.name), parse_format(precision=p, frac=f),
           parse_format(precision=f"{pad}{p}{pad}", frac=str(f)), parse_format(str(p), frac=f),
           _spec_format(fmt.spec_keys), _spec_format(f"precision={fmt.name}")]
    if f == p // 2:
        out += [parse_format(p), parse_format(str(p)), parse_format(f"fixed{p}"), parse_format(precision=p),
                _spec_format(f"precision={p}")]
    return out


def float_spellings(fmt: FloatFormat, pad: str) -> list:
    """Every way to write ``fmt``: the object, its name (any case, padded), a torch dtype and its text, as the
    spelling, as ``precision=`` and as ``dtype=``, and the spec's keys either way."""
    name = fmt.name
    spellings = [fmt, name, pad + name.upper() + pad, f"torch.{name}", TorchDtype(name)]
    out = [parse_format(s) for s in spellings] + [parse_format(precision=s) for s in spellings]
    out += [parse_format(dtype=s) for s in (fmt, name, f"torch.{name}", TorchDtype(name))]
    return out + [_spec_format(fmt.spec_keys), _spec_format(f"precision={name}")]


@FAST
@given(fixed_formats, padding)
def test_every_spelling_of_a_fixed_point_format_parses_to_it(fmt, pad):
    for parsed in fixed_spellings(fmt, pad):
        assert parsed == fmt and type(parsed) is FixedPoint and parsed.name == fmt.name
        assert hash(parsed) == hash(fmt) and parsed.frac == fmt.frac


@FAST
@given(float_formats, padding)
def test_every_spelling_of_a_float_format_parses_to_it(fmt, pad):
    for parsed in float_spellings(fmt, pad):
        assert parsed == fmt and type(parsed) is FloatFormat and parsed.bits == fmt.bits


def test_nothing_given_is_no_format_and_a_spec_default():
    assert parse_format() is None and parse_format(precision=None, frac=None, dtype=None) is None
    assert _spec_format("width=2") == FixedPoint(16, 8)


# ---- conflicting or bad spellings: refused, naming the argument ------------------------------------------------
names = st.sampled_from(FLOAT_DTYPES)
widths = st.integers(2, 53)
conflicts = st.one_of(
    # dtype with precision or frac: dtype's fault
    st.tuples(st.builds(dict, precision=widths, dtype=names), st.just("dtype"), st.just("not both")),
    st.tuples(st.builds(dict, frac=st.integers(0, 1), dtype=names), st.just("dtype"), st.just("not both")),
    st.tuples(st.builds(dict, precision=widths, frac=st.integers(0, 1), dtype=names), st.just("dtype"),
              st.just("not both")),
    # frac without an integer precision, or not an int: frac's
    st.tuples(st.builds(dict, frac=st.integers(0, 60)), st.just("frac"), st.just("frac= needs precision=")),
    st.tuples(st.builds(dict, precision=names, frac=st.integers(0, 8)), st.just("frac"),
              st.just("needs an integer precision=")),
    st.tuples(st.builds(dict, precision=widths.map(lambda p: f"fixed{p}"), frac=st.just(1)), st.just("frac"),
              st.just("needs an integer precision=")),
    st.tuples(st.builds(dict, precision=widths, frac=st.sampled_from(["x", "-1", "1.5", True])), st.just("frac"),
              st.just("non-negative int")),
    # frac beyond the width: frac's; a width beyond 2..53: precision's, with or without frac
    st.tuples(widths.flatmap(lambda p: st.builds(dict, precision=st.just(p), frac=st.integers(p, p + 9))),
              st.just("frac"), st.just("fraction bits must be")),
    st.tuples(st.builds(dict, precision=st.sampled_from([0, 1, 54, 99]), frac=st.just(0)), st.just("precision"),
              st.just("width must be 2..53")),
    st.tuples(st.builds(dict, precision=st.sampled_from([0, 1, 54, 99, "1", "fixed54"])), st.just("precision"),
              st.just("width must be 2..53")),
    # a spelling that is none, or a dtype that is no float
    st.tuples(st.builds(dict, precision=st.sampled_from(["abc", "fixed", "16.5", "-3", "float8", ""])),
              st.just("precision"), st.just("unknown number format")),
    st.tuples(st.builds(dict, precision=st.sampled_from([True, 2.5, None.__class__, (8,)])), st.just("precision"),
              st.just("must be an int")),
    st.tuples(st.builds(dict, dtype=st.sampled_from(["int8", "16", "fixed16.8", TorchDtype("int8")])),
              st.just("dtype"), st.just("unknown float dtype")),
)


@FAST
@given(conflicts)
def test_conflicting_or_bad_spellings_are_refused_naming_the_argument(case):
    keywords, param, says = case
    with pytest.raises(FormatError) as caught:
        parse_format(**keywords)
    assert caught.value.param == param and says in str(caught.value), (keywords, caught.value)
    # make_model reads a module object's keywords with the same parser, before any adapter sees the object
    with pytest.raises(InputError) as through_make_model:
        make_model(object(), **keywords)
    assert through_make_model.value.param == param and str(through_make_model.value) == str(caught.value)
    # and commsim.run parses its keywords once, by the same parser, before it builds the model
    with pytest.raises(InputError) as through_run:
        commsim.run("index-idxl", object(), n=4, **keywords)
    assert through_run.value.param == param and str(through_run.value) == str(caught.value)
    # a spec's keys by the same rules, the error naming the spec (param: model)
    if all(isinstance(v, (int, str)) and not isinstance(v, bool) for v in keywords.values()):
        keys = ",".join(f"{k}={v}" for k, v in keywords.items())
        if all(str(v).strip() for v in keywords.values()):
            with pytest.raises(InputError) as in_spec:
                _spec_format(keys)
            assert in_spec.value.param == "model"
            assert str(in_spec.value) == f"model spec {'elman:' + keys!r}: {caught.value}"


def test_a_spelling_given_twice_is_refused_naming_precision():
    with pytest.raises(FormatError, match="given twice") as caught:
        parse_format(8, precision=8)
    assert caught.value.param == "precision"


def test_budget_reads_its_dtype_with_the_same_parser():
    assert format_of(None, "torch.bfloat16")[1] == FloatFormat("bfloat16")
    assert format_of(16, None)[2] == parse_format(16).name == "fixed16.8"
    with pytest.raises(InputError) as caught:
        format_of(16, "float32")
    assert caught.value.param == "dtype" and "has p = 32 bits" in str(caught.value)
    with pytest.raises(InputError) as caught:
        format_of(None, "int8")
    assert caught.value.param == "dtype" and "unknown float dtype 'int8'" in str(caught.value)
