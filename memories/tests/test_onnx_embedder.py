"""The recall question's embedding through ONNX Runtime: same vectors as torch, exported once, a logged fallback.

The export runs for real (a child process, the packaged weights, offline) into
this test run's data folder, once per folder, as a web worker's start would.
"""

from __future__ import annotations

import json
import logging
import shutil
import sys

import numpy as np
import pytest
from django.conf import settings

from memories.embeddings import embedders, onnx
from memories.embeddings.embedders import LOCAL_MODEL_NAME, LocalEmbedder

# Short and long, punctuated, numeric, accented, other scripts, and one past the model's 256 tokens.
TEXTS = [
    "hi",
    "What did Caroline research?",
    "When did Melanie go camping in June?",
    "Mona: I finally finished the painting of the lake at sunrise, it took me three weekends!",
    "Max: Did you get the tickets for the 8:30pm show on 2023-07-14? They were $45 each.",
    "Qu'est-ce que tu as mangé à Zürich ? Ein Käsefondue, natürlich.",
    "東京で会いましょう。 Давай встретимся в Москве.",
    "   leading and trailing spaces   ",
    "UPPER case And MiXeD case #hashtags @mentions and emoji 🎨🏕️",
    "why " * 300,
]


# One worker runs this module, so its tests share the torch model and the export its fixtures load once.
pytestmark = pytest.mark.xdist_group("onnx_embedder")


@pytest.fixture(scope="module")
def exported():
    """The verified export in this run's data folder (made now if it is not there yet)."""
    return onnx.load(settings.DATA_DIR)


@pytest.fixture(scope="module")
def torch_model():
    return embedders._load_local_model()


def test_onnx_vectors_agree_with_the_torch_pipeline_that_wrote_the_stored_ones(exported, torch_model):
    stored_way = torch_model.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True, batch_size=4)
    for text, expected in zip(TEXTS, stored_way, strict=True):
        vector = exported.encode(text)
        assert vector.shape == (384,)
        assert abs(float(np.linalg.norm(vector)) - 1) < 1e-5
        assert float(np.max(np.abs(vector - expected))) < onnx.TOLERANCE, text[:40]


def test_the_encoder_tokenises_as_the_model_does_cut_at_256_tokens(exported, torch_model):
    for text in TEXTS:
        expected = torch_model.tokenizer([text], truncation=True, max_length=256)["input_ids"][0]
        assert exported.tokenizer.encode(text).ids == list(expected)
    assert len(exported.tokenizer.encode(TEXTS[-1]).ids) == 256  # the positive control: this one is cut


def test_the_export_is_made_once_in_the_data_folder_and_named_after_the_packaged_weights(exported):
    folder = onnx.export_folder(settings.DATA_DIR, onnx.model_dir())
    assert exported.folder == folder and folder.parent == settings.DATA_DIR / "models"
    manifest = json.loads((folder / "verified.json").read_text())
    assert manifest["model"] == LOCAL_MODEL_NAME and manifest["max_deviation"] < onnx.TOLERANCE
    written = (folder / "model.onnx").stat().st_mtime_ns
    onnx.load(settings.DATA_DIR)  # a second process start finds it and does not export again
    assert (folder / "model.onnx").stat().st_mtime_ns == written


def test_recall_questions_go_through_onnx_and_keep_the_model_id(exported, torch_model):
    embedder = LocalEmbedder(batch_size=8)
    assert embedder.prepare_query_encoder() == "onnx" and embedder.fallback_reason == ""
    assert embedder.name == LOCAL_MODEL_NAME  # same vectors, same id: no row is re-embedded
    for text in TEXTS[:4]:
        question_way = embedder.embed_one(text)
        stored_way = embedder.embed([text])[0]
        assert max(abs(a - b) for a, b in zip(question_way, stored_way, strict=True)) < onnx.TOLERANCE


def _fallback(caplog, embedder: LocalEmbedder, reason_part: str):
    with caplog.at_level(logging.WARNING, logger="memories.embeddings.embedders"):
        assert embedder.prepare_query_encoder() == "torch"
    assert reason_part in embedder.fallback_reason
    said = [record.getMessage() for record in caplog.records if record.name == "memories.embeddings.embedders"]
    assert any("fall back to torch" in message and reason_part in message for message in said), said
    # Torch still answers, with the stored vectors' pipeline.
    text = "What did Mona paint?"
    assert max(abs(a - b) for a, b in zip(embedder.embed_one(text), embedder.embed([text])[0], strict=True)) < 1e-6


def test_without_onnxruntime_questions_fall_back_to_torch_and_the_log_says_why(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if the package were not installed
    _fallback(caplog, LocalEmbedder(batch_size=8), "onnxruntime is not installed")


def test_asking_for_torch_is_a_fallback_that_says_so(monkeypatch, caplog):
    monkeypatch.setenv("ARCHIVIST_QUERY_RUNTIME", "torch")
    _fallback(caplog, LocalEmbedder(batch_size=8), "ARCHIVIST_QUERY_RUNTIME=torch")


def test_an_export_whose_vectors_disagree_here_is_not_served(exported, tmp_path, caplog):
    # A data folder holding an export whose stored torch references are not what this model gives.
    folder = onnx.export_folder(tmp_path, onnx.model_dir())
    shutil.copytree(exported.folder, folder)
    manifest = json.loads((folder / "verified.json").read_text())
    manifest["references"][1] = [value + 1e-3 for value in manifest["references"][1]]
    (folder / "verified.json").write_text(json.dumps(manifest))
    _fallback(caplog, LocalEmbedder(batch_size=8, data_dir=tmp_path), "differ from the torch pipeline")


def test_a_corrupt_export_is_not_served(exported, tmp_path, caplog):
    folder = onnx.export_folder(tmp_path, onnx.model_dir())
    folder.mkdir(parents=True)
    shutil.copy(exported.folder / "verified.json", folder / "verified.json")
    (folder / "model.onnx").write_bytes(b"not a model")
    _fallback(caplog, LocalEmbedder(batch_size=8, data_dir=tmp_path), "could not open")


def test_warm_up_loads_the_query_encoder_before_the_first_question(exported):
    embedders._embedders.clear()
    try:
        report = embedders.embedder_warm_up()
        assert report["runtime"] == "onnx" and report["model"] == LOCAL_MODEL_NAME
        assert embedders.get_embedder().query_runtime == "onnx"
    finally:
        embedders._embedders.clear()
