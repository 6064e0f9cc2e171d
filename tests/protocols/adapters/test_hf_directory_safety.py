"""Hostile Hugging Face directories: every file the loader would read is resolved and sized before transformers
opens any of them.  A sharded index naming a FIFO (absolute, or inside a subdirectory), ``/dev/zero`` through a
symlink, a path out of the directory, sparse weights declaring a 6 GiB tensor (safetensors header; a torch.save
zip's record), sparse side files of 3 GiB, a config nested past JSON's depth: each is exit 2 with one line naming
it, without reading the file (a FIFO would block, /dev/zero and the sparse files would fill memory).  A pickled
payload in ``pytorch_model.bin`` is refused naming it, in both of torch's wordings, and torch's advice to load with
``weights_only=False`` is never passed on."""
from __future__ import annotations

import io
import json
import os
import shutil
import struct
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
torch.set_num_threads(1)

from cli_helpers import run_main  # noqa: E402
from commsim.core.errors import InputError  # noqa: E402
from commsim.runs.run import run_reduction  # noqa: E402
from examples.hf_decoders import save_tiny_decoder  # noqa: E402
from protocols.adapters.torch.hf_files import load_failure, safetensors_bytes, torch_zip_bytes  # noqa: E402

GIB = 2 ** 30
INDEX = "model.safetensors.index.json"


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    from transformers import GPT2Config, GPT2LMHeadModel

    from examples.real_models import save_tiny_mamba
    root = tmp_path_factory.mktemp("base")
    GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=8, n_head=2, vocab_size=8, n_positions=8)).save_pretrained(
        root / "gpt2")
    return {"hf": Path(save_tiny_decoder("qwen2", str(root / "qwen2"), hidden=8, heads=2, kv_heads=2)),
            "hf-llama": Path(save_tiny_decoder("llama", str(root / "llama"), hidden=8, heads=2, kv_heads=2)),
            "hf-gpt2": root / "gpt2", "hf-mamba": Path(save_tiny_mamba(str(root / "mamba")))}


def copy_of(base: Path, tmp_path: Path, name: str = "model") -> Path:
    target = tmp_path / name
    shutil.copytree(base, target)
    return target


def refused(capsys, kind: str, directory: Path, *needles: str) -> str:
    """Run the CLI on ``kind:directory``: exit 2, one line naming each of ``needles``, no traceback."""
    code, _, err = run_main(capsys, "run", "index-idxl", "--model", f"{kind}:{directory}", "--n", "4")
    assert code == 2, err
    assert "Traceback" not in err and all(n in err for n in needles), err
    return err


def sharded(directory: Path, shard: str) -> None:
    """Replace the weights by an index whose weight_map names ``shard``."""
    (directory / "model.safetensors").unlink()
    (directory / INDEX).write_text(json.dumps({"metadata": {}, "weight_map": {"lm_head.weight": shard}}))


@pytest.mark.parametrize("kind", ["hf", "hf-llama"])
def test_an_index_naming_a_fifo_outside_is_refused_as_an_absolute_path(base, tmp_path, capsys, kind):
    fifo = tmp_path / "weights.safetensors"
    os.mkfifo(fifo)
    directory = copy_of(base[kind], tmp_path)
    sharded(directory, str(fifo))
    refused(capsys, kind, directory, INDEX, "no absolute path")


@pytest.mark.parametrize("kind", ["hf", "hf-llama", "hf-gpt2", "hf-mamba"])
def test_an_index_naming_a_fifo_in_a_subdirectory_is_refused_as_a_pipe(base, tmp_path, capsys, kind):
    directory = copy_of(base[kind], tmp_path)
    (directory / "shards").mkdir()
    os.mkfifo(directory / "shards" / "w.safetensors")
    sharded(directory, "shards/w.safetensors")
    refused(capsys, kind, directory, "shards/w.safetensors", "a pipe (FIFO)")


def test_dev_zero_through_a_symlink_is_refused_as_a_shard_and_as_the_weights(base, tmp_path, capsys):
    directory = copy_of(base["hf"], tmp_path, "shard")
    os.symlink("/dev/zero", directory / "zero.safetensors")
    sharded(directory, "zero.safetensors")
    refused(capsys, "hf", directory, "zero.safetensors", "a device")
    directory = copy_of(base["hf"], tmp_path, "whole")
    (directory / "model.safetensors").unlink()
    os.symlink("/dev/zero", directory / "model.safetensors")
    refused(capsys, "hf", directory, "model.safetensors", "a device")


def test_a_shard_out_of_the_directory_is_refused(base, tmp_path, capsys):
    shutil.copy(base["hf"] / "model.safetensors", tmp_path / "outside.safetensors")
    directory = copy_of(base["hf"], tmp_path)
    sharded(directory, "../outside.safetensors")
    refused(capsys, "hf", directory, "'../outside.safetensors'", "no '..'")


def test_a_sharded_directory_of_real_shards_in_a_subdirectory_loads(base, tmp_path):
    directory = copy_of(base["hf"], tmp_path)
    (directory / "shards").mkdir()
    (directory / "model.safetensors").rename(directory / "shards" / "part-1.safetensors")
    from safetensors import safe_open
    with safe_open(directory / "shards" / "part-1.safetensors", "pt") as f:
        names = list(f.keys())
    (directory / INDEX).write_text(json.dumps({"metadata": {}, "weight_map": {k: "shards/part-1.safetensors"
                                                                             for k in names}}))
    report = run_reduction("index-idxl", f"hf:{directory}", 4, instances=4, certify=False)
    assert report.protocol_matches_model and report.torch_agreement["ok"] is True


def sparse_safetensors(path: Path, declared: int, offsets: tuple[int, int] | None = None) -> None:
    """A safetensors file whose one F32 tensor declares ``declared`` bytes, its data a hole (os.truncate)."""
    header = json.dumps({"w": {"dtype": "F32", "shape": [declared // 4],
                               "data_offsets": list(offsets or (0, declared))}}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header)
    os.truncate(path, 8 + len(header) + declared)


def test_a_sparse_safetensors_file_declaring_6_gib_is_refused_by_its_header(base, tmp_path, capsys):
    directory = copy_of(base["hf"], tmp_path)
    sparse_safetensors(directory / "model.safetensors", 6 * GIB)
    assert os.stat(directory / "model.safetensors").st_blocks * 512 < GIB       # a hole, not data
    refused(capsys, "hf", directory, "would need about 6", "the weights")
    with pytest.raises(InputError, match="would need about 6"):
        run_reduction("index-idxl", f"hf:{directory}", 4, instances=4, certify=False)
    sparse_safetensors(directory / "model.safetensors", 64, offsets=(0, 6 * GIB))   # offsets past the data
    refused(capsys, "hf", directory, "declares 64 bytes at offsets 0..6442450944")


def sparse_torch_zip(path: Path, declared: int, name: str = "archive/data/0") -> None:
    """A zip archive (torch.save's container) whose one stored record declares ``declared`` bytes (zip64), its
    data a hole (a seek past it)."""
    raw = name.encode()
    extra = struct.pack("<HHQQ", 1, 16, declared, declared)
    with path.open("wb") as f:
        f.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, 0, 0, 0, 0, 0xFFFFFFFF, 0xFFFFFFFF, len(raw),
                            len(extra)) + raw + extra)
        f.seek(declared, os.SEEK_CUR)
        cd_offset = f.tell()
        central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, 0, 0, 0, 0, 0xFFFFFFFF, 0xFFFFFFFF,
                              len(raw), len(extra), 0, 0, 0, 0, 0) + raw + extra
        f.write(central)
        eocd64 = f.tell()
        f.write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, 1, 1, len(central), cd_offset))
        f.write(struct.pack("<IIQI", 0x07064B50, 0, eocd64, 1))
        f.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0))


def test_a_sparse_pytorch_model_bin_declaring_6_gib_is_refused_by_its_zip_records(base, tmp_path, capsys):
    directory = copy_of(base["hf"], tmp_path)
    (directory / "model.safetensors").unlink()
    sparse_torch_zip(directory / "pytorch_model.bin", 6 * GIB)
    assert torch_zip_bytes("hf", directory / "pytorch_model.bin", "d") == 6 * GIB
    refused(capsys, "hf", directory, "would need about 6", "the weights")


def test_the_declared_bytes_of_real_weights_are_their_tensors(base, tmp_path):
    sd = {"a": torch.zeros(3, 5), "b": torch.zeros(7, dtype=torch.float16)}
    from safetensors.torch import save_file
    save_file(sd, tmp_path / "w.safetensors")
    assert safetensors_bytes("hf", tmp_path / "w.safetensors", "d") == 3 * 5 * 4 + 7 * 2
    torch.save(sd, tmp_path / "w.bin")
    assert torch_zip_bytes("hf", tmp_path / "w.bin", "d") >= 3 * 5 * 4 + 7 * 2


@pytest.mark.parametrize("side", ["generation_config.json", "adapter_config.json", INDEX])
def test_a_sparse_3_gib_side_file_is_refused_by_its_size(base, tmp_path, capsys, side):
    directory = copy_of(base["hf"], tmp_path)
    with (directory / side).open("wb") as f:
        f.truncate(3 * GIB)
    refused(capsys, "hf", directory, side, f"has {3 * GIB} bytes")


def test_a_config_nested_past_json_s_depth_is_refused(base, tmp_path, capsys):
    directory = copy_of(base["hf"], tmp_path)
    (directory / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    refused(capsys, "hf", directory, "config.json", "nests its values more than")


def _payload_error(obj) -> BaseException:
    """The error torch.load(weights_only=True) raises on ``obj`` saved by torch.save."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    with pytest.raises(Exception) as raised:
        torch.load(buffer, weights_only=True)
    return raised.value


class Unlisted:
    """A class the weights-only unpickler does not allow."""


def test_both_of_torch_s_payload_wordings_are_named_and_its_advice_dropped():
    blocked = _payload_error({"x": ShellPayload("true")})        # "unsupported GLOBAL posix.system ... blocked"
    unlisted = _payload_error({"x": Unlisted()})                 # "Unsupported global: GLOBAL module.Unlisted"
    assert "weights_only" in str(blocked) and "weights_only" in str(unlisted)          # torch gives the advice
    assert "system" in load_failure(blocked) and "refuses to load" in load_failure(blocked)
    assert "Unlisted" in load_failure(unlisted) and "refuses to load" in load_failure(unlisted)
    for exc in (blocked, unlisted):
        assert "weights_only" not in load_failure(exc) and "(unreadable)" not in load_failure(exc)
    other = OSError("Unable to load weights. Re-running `torch.load` with `weights_only` set to `False` will likely "
                    "succeed, but it can result in arbitrary code execution. The file is truncated.")
    assert load_failure(other) == "OSError: Unable to load weights. The file is truncated."


class ShellPayload:
    """Unpickling this runs a shell command (the payload a weights file must never run)."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


def test_a_payload_in_pytorch_model_bin_is_refused_naming_it_and_never_runs(base, tmp_path, capsys):
    directory = copy_of(base["hf"], tmp_path)
    from safetensors.torch import load_file
    weights = load_file(directory / "model.safetensors")
    (directory / "model.safetensors").unlink()
    marker = tmp_path / "ran"
    torch.save({**weights, "extra": ShellPayload(f"touch {marker}")}, directory / "pytorch_model.bin")
    err = refused(capsys, "hf", directory, "pickles", "system", "refuses to load")
    assert "weights_only" not in err and not marker.exists()


def test_a_config_declaring_sizes_past_the_memory_budget_is_refused_before_loading(base, tmp_path, capsys):
    directory = copy_of(base["hf"], tmp_path)
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps({**config, "vocab_size": 10 ** 9}))
    refused(capsys, "hf", directory, "Qwen2ForCausalLM", "vocab 1000000000", "would need about")
