"""``from_torch`` and the torch loaders refuse bad input with an error naming the argument (exit 2 on the
command line): a part that is not a module or a matrix, a module on the meta device, a bad precision, a bad
size; a ``torch:`` file that pickles code is named by the global it pickles in every wording torch uses, and
torch's advice to load with ``weights_only=False`` is never repeated; a ``config.json`` nested without end is
refused with a reason, not a RecursionError."""
from __future__ import annotations

import json
import os
import pickle

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import commsim  # noqa: E402
from commsim.cli import main  # noqa: E402
from protocols.adapters.torch import from_torch  # noqa: E402
from protocols.adapters.torch.files import load_torch_file  # noqa: E402
from protocols.adapters.torch.layers import AdapterError  # noqa: E402


def _cli(args, capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    return done.value.code, " ".join(capsys.readouterr().err.split())


def _named(call, param: str, *words: str) -> str:
    with pytest.raises(AdapterError) as caught:
        call()
    assert caught.value.param == param, (caught.value.param, str(caught.value))
    for word in words:
        assert word in str(caught.value), str(caught.value)
    return str(caught.value)


LSTM = nn.LSTM(4, 3, batch_first=True)
EMBED = nn.Embedding(3, 4)


@pytest.mark.parametrize("key", ["embedding", "positions", "key_embedding", "value_embedding"])
@pytest.mark.parametrize("value", ["x", 5, [[1, 2], [3]], [1.0, 2.0], [[["a"]]]])
def test_a_token_table_that_is_not_one_is_named(key, value):
    _named(lambda: from_torch(LSTM, **{key: value}), key, f"{key} ", "must be", "(rows, dim) matrix")


@pytest.mark.parametrize("key,value", [("head", "x"), ("head", 5), ("head", [nn.Linear(3, 2)]), ("norm", "x"),
                                       ("norm", 5), ("norm", [nn.LayerNorm(4), "relu"])])
def test_a_head_or_norm_that_is_not_a_module_is_named(key, value):
    _named(lambda: from_torch(LSTM, embedding=EMBED, **{key: value}), key, f"{key} must be a torch module")


def test_the_parts_still_accepted():
    model = from_torch(LSTM, embedding=EMBED.weight.detach().numpy(), head=nn.Linear(3, 2))
    assert model.vocab_size == 3


@pytest.mark.parametrize("precision", [-1, 0, "fixed-3", 2.5, True, "float12"])
def test_a_bad_precision_is_named(precision):
    _named(lambda: from_torch(LSTM, embedding=EMBED, precision=precision), "precision", "precision")


@pytest.mark.parametrize("key", ["vocab_size", "seq_len"])
@pytest.mark.parametrize("value", [-1, 0, float("nan"), 2.5])
def test_a_bad_size_is_named(key, value):
    with pytest.raises(commsim.InputError) as caught:
        from_torch(LSTM, embedding=EMBED, **{key: value})
    assert caught.value.param == key
    with pytest.raises(commsim.InputError) as caught:
        commsim.make_model(LSTM, **{key: value})
    assert caught.value.param == key


def test_a_module_on_the_meta_device_is_refused_with_the_way_out():
    meta = nn.LSTM(4, 3, batch_first=True, device="meta")
    _named(lambda: from_torch(meta, embedding=EMBED), "model", "meta device", "to_empty")
    _named(lambda: commsim.make_model(meta), "model", "meta device")
    _named(lambda: from_torch(LSTM, embedding=nn.Embedding(3, 4, device="meta")), "embedding", "meta device")
    with pytest.raises(commsim.InputError, match="meta device"):
        commsim.run("index-idxl", {"core": meta, "embedding": EMBED, "head": nn.Linear(3, 2)}, n=4)


class _System:
    def __reduce__(self):
        return (os.system, ("echo ran",))


class _Own:
    pass


@pytest.mark.parametrize("payload,name", [(_System(), "system"), (_Own(), "_Own")])
def test_a_torch_file_that_pickles_code_is_named_without_torchs_advice(tmp_path, capsys, payload, name):
    path = tmp_path / "model.pt"
    torch.save({"core": payload}, path)
    with pytest.raises(AdapterError) as caught:
        load_torch_file(str(path))
    message = str(caught.value)
    assert "pickles " in message and name in message and "will not load" in message, message
    assert "weights_only=False" not in message and "weights_only` set to `False" not in message
    code, err = _cli(["run", "index-idxl", "--model", f"torch:{path}", "--n", "4"], capsys)
    assert code == 2 and "will not load" in err and "unreadable" not in err, err


def test_every_torch_refusal_wording_is_read():
    """torch 2.13's wordings: an unsupported global, a blocked module, and a refusal that names no global."""
    from protocols.adapters.torch.files import refusal
    texts = {
        "Weights only load failed. ... WeightsUnpickler error: Unsupported global: GLOBAL evil.Thing was not an "
        "allowed global by default. Please use `torch.serialization.add_safe_globals([evil.Thing])`": "evil.Thing",
        "Weights only load failed. In PyTorch 2.6, we changed the default value of the `weights_only` argument in "
        "`torch.load` from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will "
        "likely succeed\n\nTrying to load unsupported GLOBAL posix.system whose module posix is blocked.":
            "posix.system",
    }
    for text, name in texts.items():
        assert f"pickles {name}, which" in refusal("m.pt", text)
    other = refusal("m.pt", "Weights only load failed. In PyTorch 2.6, we changed the default value of the "
                    "`weights_only` argument. Re-running `torch.load` with `weights_only` set to `False` will likely "
                    "succeed\n Please file an issue: WeightsUnpickler error: \n\nCan only build Tensor, Parameter, "
                    "OrderedDict or types allowlisted via `add_safe_globals`, but got <class 'x.Y'>\n\nCheck the "
                    "documentation of torch.load to learn more")
    assert "Can only build Tensor" in other and "False" not in other


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
@pytest.mark.parametrize("protocol,reason", [(2, "pickles"), (4, "Unsupported operand")])
def test_a_bare_pickle_is_refused_with_torchs_reason_and_not_its_advice(tmp_path, protocol, reason):
    path = tmp_path / "raw.pt"
    path.write_bytes(pickle.dumps({"core": _Own()}, protocol=protocol))   # no zip: torch's legacy format
    with pytest.raises(AdapterError) as caught:
        load_torch_file(str(path))
    message = str(caught.value)
    assert reason in message and "False" not in message, message


@pytest.mark.parametrize("kind", ["hf-gpt2", "hf-llama", "hf-mamba", "hf-rwkv"])
@pytest.mark.parametrize("depth", [40, 100_000])
def test_a_config_nested_without_end_is_refused_with_a_reason(tmp_path, capsys, kind, depth):
    pytest.importorskip("transformers")
    model_type = {"hf-gpt2": "gpt2", "hf-llama": "llama", "hf-mamba": "mamba", "hf-rwkv": "rwkv"}[kind]
    (tmp_path / "config.json").write_text('{"model_type": %s, "x": %s%s}'
                                          % (json.dumps(model_type), "[" * depth, "]" * depth))
    code, err = _cli(["run", "index-idxl", "--model", f"{kind}:{tmp_path}", "--n", "4"], capsys)
    assert code == 2, err
    assert "--model" in err and "nests its values more than" in err, err
