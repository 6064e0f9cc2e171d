"""The one digest (row_digests) and the one collision finder (collision_groups) every certificate uses."""
from __future__ import annotations

import numpy as np
import pytest

import commsim.core.digests as digests
from commsim.core.bits import Bits
from commsim.core.digests import collision_groups, message_rows, row_digests


def _earliest_repeat(keys):
    """Brute force: the first j whose key occurred before, and the first i with that key."""
    seen = {}
    for j, k in enumerate(keys):
        if k in seen:
            return seen[k], j
        seen[k] = j
    return None


def test_first_is_the_earliest_repeat_for_every_kind_of_key():
    assert collision_groups(["a", "b", "c"]).first() is None
    assert collision_groups(["x", "y", "z", "y", "x"]).first() == (1, 3)
    assert collision_groups([b"\x00", b"\x01", b"\x00"]).first() == (0, 2)
    assert collision_groups(np.array([5, 6, 7, 8, 6])).first() == (1, 4)
    rows = np.array([[0, 1, 1], [1, 0, 0], [0, 1, 0], [1, 0, 0]], dtype=np.uint8)
    assert collision_groups(rows).first() == (1, 3)
    assert collision_groups([]).first() is None and collision_groups([7]).first() is None
    rng = np.random.default_rng(0)
    for _ in range(20):
        keys = rng.integers(0, 50, size=40)
        assert collision_groups(keys).first() == _earliest_repeat(keys.tolist())


@pytest.mark.parametrize("dtype,width", [(np.uint8, 3), (np.uint8, 40), (np.int64, 1), (np.int64, 2), (np.int64, 9),
                                         (bool, 70)])
def test_groups_are_exactly_the_equal_rows(dtype, width):
    rng = np.random.default_rng(width)
    rows = rng.integers(0, 2, size=(3000, width)).astype(dtype)
    groups = collision_groups(rows)
    _, inverse, counts = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    assert groups.distinct == len(counts) and len(groups) == int((counts >= 2).sum())
    firsts = [int(g[0]) for g in groups.groups()]
    assert firsts == sorted(firsts)                                  # ordered by their first member
    for g in groups.groups():
        assert list(g) == sorted(g) and len(set(inverse.reshape(-1)[g].tolist())) == 1
        assert (inverse.reshape(-1) == inverse.reshape(-1)[g[0]]).sum() == len(g)


def test_pairs_skip_members_holding_the_same_input():
    rows = np.array([[1], [2], [1], [1], [2]], dtype=np.uint8)
    inputs = np.array([[5], [6], [5], [7], [8]])
    groups = collision_groups(rows)
    assert groups.pairs() == [(0, 2), (1, 4)]
    assert groups.pairs(inputs) == [(0, 3), (1, 4)]                  # 0 and 2 hold the same input
    assert groups.pairs(inputs, limit=1) == [(0, 3)]
    assert collision_groups(np.array([[1], [1]], dtype=np.uint8)).pairs(np.array([[3], [3]])) == []


def test_row_digests_are_exact_up_to_128_bits_and_hashed_beyond():
    keys = np.array([[1, 2], [1, 2], [2, 1]], dtype=np.int64)
    d = row_digests(keys)
    assert d.shape == (3, 2) and d.dtype == np.uint64 and np.array_equal(d, keys.view(np.uint64))
    packed = np.array([[0xAB, 0xCD]], dtype=np.uint8)
    assert row_digests(packed)[0, 1] == 0xABCD << 48                  # big-endian bytes, exact
    assert row_digests(np.zeros((3, 0), dtype=np.int64)).shape == (3, 2)
    wide = np.random.default_rng(0).integers(0, 256, size=(500, 33), dtype=np.uint8)
    wide[7] = wide[3]
    dw = row_digests(wide)
    assert np.array_equal(dw[7], dw[3]) and len(np.unique(dw, axis=0)) == 499
    assert np.array_equal(row_digests(dw), dw)                        # a digest is its own digest


def test_a_hash_accident_never_makes_a_group(monkeypatch):
    real = digests._digest_words
    monkeypatch.setattr(digests, "_digest_words",
                        lambda words: np.zeros((len(words), 2), dtype=np.uint64) if words.shape[1] > 2 else real(words))
    rows = np.random.default_rng(1).integers(0, 256, size=(50, 24), dtype=np.uint8)
    rows[30] = rows[11]
    groups = collision_groups(rows)                                   # every digest collides: the rows decide
    assert len(groups) == 1 and groups.first() == (11, 30) and groups.distinct == 49


def test_message_rows_split_one_bit_string_into_equal_messages():
    rows = message_rows(Bits.from_str("101" "101" "011" "000"), 4)
    assert rows.shape == (4, 1) and rows[0, 0] == rows[1, 0] == 0b10100000
    assert collision_groups(rows).pairs() == [(0, 1)]
    assert message_rows(Bits.from_str("1" * 16), 2).tolist() == [[255], [255]]
    with pytest.raises(ValueError):
        message_rows(Bits.from_str("101"), 2)
