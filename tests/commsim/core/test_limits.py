"""The one validated-size helper (commsim.core.limits): limits named, never a huge number printed in full,
nothing as large as the value judged is built."""
from __future__ import annotations


import pytest

from commsim.core.errors import InputError
from commsim.core.limits import (MEMORY_BUDGET_BYTES, check_memory, check_seed, check_size, show_bytes,
                                 show_size)


def test_show_size_is_short_for_huge_numbers():
    assert show_size(12345) == "12345"
    assert show_size(2 ** 1_000_000) == "2^1000000"
    assert show_size(10 ** 30 + 7) == "more than 10^30"
    assert show_size(-(2 ** 200)) == "-2^200"
    text = show_size(3 ** 2_000_000)                # ~950,000 digits: judged by its bit length, never printed
    assert text == "more than 10^954242"


def test_check_size_names_the_parameter_and_the_limit():
    assert check_size(5, "n", 1, 10) == 5
    with pytest.raises(InputError) as exc:
        check_size(2 ** 1_000_000, "n", 1, 10, "the matrix has 2^n rows")
    assert exc.value.param == "n"
    message = str(exc.value)
    assert message == "n = 2^1000000: too large (the matrix has 2^n rows); the largest n that runs is 10"
    with pytest.raises(InputError, match="n must be at least 1, got -5"):
        check_size(-5, "n", 1, 10)
    with pytest.raises(InputError, match="must be an integer"):
        check_size(1.5, "n")
    with pytest.raises(InputError, match="must be an integer"):
        check_size(True, "n")


def test_check_seed_is_a_numpy_seed():
    assert check_seed(0) == 0 and check_seed(2 ** 63 - 1) == 2 ** 63 - 1
    for bad in (-1, 2 ** 63):
        with pytest.raises(InputError) as exc:
            check_seed(bad, "seed")
        assert exc.value.param == "seed"


def test_check_memory_against_the_budget():
    assert MEMORY_BUDGET_BYTES == 4 * 2 ** 30
    check_memory(MEMORY_BUDGET_BYTES, "model", "the weights")
    with pytest.raises(InputError) as exc:
        check_memory(60 * 2 ** 30, "model", "the weights")
    assert exc.value.param == "model" and "60.0 GiB" in str(exc.value) and "4.0 GiB" in str(exc.value)
    assert show_bytes(10 ** 40).endswith("bytes") and len(show_bytes(10 ** 40)) < 40
