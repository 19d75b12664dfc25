"""Int8 MiniLM as its own model id (ARCHIVIST_EMBEDDING_PRECISION=int8): rows and questions both int8.

The quantisation runs for real (the verified fp32 export of this run's data
folder, `quantize_dynamic`), once per folder, beside the export. Its vectors are
not fp32's within 1e-4, so they are stored under `all-MiniLM-L6-v2-int8`; rows
of the fp32 id are not compared with int8 questions until `reembed` moves them.
"""

from __future__ import annotations

import io
import json
import logging
import shutil

import numpy as np
import pytest
from django.conf import settings
from django.core.management import call_command

from memories.embeddings import embedders, onnx
from memories.embeddings.embedders import LOCAL_MODEL_NAME, LocalEmbedder
from memories.embeddings.writes import memory_embed_batch
from memories.models import Memory
from memories.tests.api.helpers import recall

INT8 = onnx.INT8_MODEL_NAME
# Found by meaning only: the question shares no word with the row.
ROW = "Quarterly revenue grew by eight percent"
QUESTION = "How did sales and income change?"


# One worker runs this module, so its tests share the torch model and the export its fixtures load once.
pytestmark = pytest.mark.xdist_group("int8_embeddings")


@pytest.fixture(scope="module")
def quantised():
    """The int8 encoder of this run's data folder (exported and quantised now if they are not there yet)."""
    return onnx.load(settings.DATA_DIR, precision="int8")


@pytest.fixture
def int8(settings, quantised):
    settings.EMBEDDER = "local"
    settings.EMBEDDING_PRECISION = "int8"
    return embedders.get_embedder()


def test_the_int8_file_is_made_once_beside_the_fp32_export_and_is_another_model(quantised):
    fp32 = onnx.load(settings.DATA_DIR)
    assert quantised.folder == onnx.quantised_folder(fp32.folder) and quantised.folder.parent == fp32.folder.parent
    manifest = json.loads((quantised.folder / "verified.json").read_text())
    assert manifest["model"] == INT8 and manifest["quantised_from"] == fp32.folder.name
    written = (quantised.folder / "model.onnx").stat().st_mtime_ns
    onnx.load(settings.DATA_DIR, precision="int8")  # a second start finds it and does not quantise again
    assert (quantised.folder / "model.onnx").stat().st_mtime_ns == written
    # Why it is another id: the vectors are close, but not fp32's within the tolerance.
    first, second = quantised.encode(QUESTION), fp32.encode(QUESTION)
    assert float(np.max(np.abs(first - second))) > onnx.TOLERANCE
    assert float(first @ second) > 0.9


def test_rows_embedded_with_int8_record_its_id_and_its_vectors(int8, quantised, make_memory):
    assert int8.name == INT8
    row = make_memory(body=ROW)
    assert memory_embed_batch(ids=[str(row.pk)], coalesce=False).embedded == [str(row.pk)]
    row.refresh_from_db()
    assert row.embedding_model == INT8
    # Stored in half precision (halfvec): each value within 2**-12 of the model's, for values below 1.
    assert float(np.max(np.abs(np.asarray(row.embedding) - quantised.encode(ROW)))) < 2**-12


def test_questions_are_embedded_by_the_model_the_rows_are(int8, quantised):
    question = np.asarray(embedders.embed_query(QUESTION))
    row_way = np.asarray(int8.embed([QUESTION])[0])
    assert float(np.max(np.abs(question - row_way))) < 1e-6
    fp32 = np.asarray(LocalEmbedder(batch_size=8).embed_one(QUESTION))
    assert float(np.max(np.abs(question - fp32))) > onnx.TOLERANCE  # the positive control: not fp32's


def test_switching_to_int8_leaves_fp32_rows_unrecallable_by_meaning_until_reembed(
    settings, quantised, agent_api, make_memory, general
):
    settings.EMBEDDER = "local"
    row = make_memory(body=ROW)
    memory_embed_batch(ids=[str(row.pk)], coalesce=False)
    found = recall(agent_api, general, QUESTION, mode="semantic").json()
    assert [result["body"] for result in found["results"]] == [ROW]  # the positive control, fp32 on both sides

    settings.EMBEDDING_PRECISION = "int8"
    data = recall(agent_api, general, QUESTION, mode="semantic").json()
    assert data["results"] == []
    assert "1 fact(s) here are not searchable by meaning yet" in data["notice"]

    out = io.StringIO()
    call_command("reembed", stdout=out, stderr=io.StringIO())
    assert f"Embedded 1 memories with {INT8}" in out.getvalue()
    assert Memory.objects.get(pk=row.pk).embedding_model == INT8
    found = recall(agent_api, general, QUESTION, mode="semantic").json()
    assert [result["body"] for result in found["results"]] == [ROW]


def _int8_copy(quantised, tmp_path):
    """A data folder holding this run's fp32 export and int8 file, to spoil."""
    fp32 = onnx.export_folder(tmp_path, onnx.model_dir())
    shutil.copytree(quantised.folder.with_name(fp32.name), fp32)
    target = onnx.quantised_folder(fp32)
    shutil.copytree(quantised.folder, target)
    return target


def _falls_back_to_fp32(caplog, tmp_path, reason_part: str) -> None:
    embedder = LocalEmbedder(batch_size=8, data_dir=tmp_path, precision="int8")
    with caplog.at_level(logging.WARNING, logger="memories.embeddings.embedders"):
        assert embedder.name == LOCAL_MODEL_NAME  # fp32 vectors, under fp32's id: never under int8's
    assert embedder.query_runtime == "onnx" and reason_part in embedder.fallback_reason
    said = [record.getMessage() for record in caplog.records if record.name == "memories.embeddings.embedders"]
    assert any("int8 embeddings were asked for" in message and reason_part in message for message in said), said
    fp32 = LocalEmbedder(batch_size=8)
    assert max(abs(a - b) for a, b in zip(embedder.embed([ROW])[0], fp32.embed([ROW])[0], strict=True)) < 1e-6


def test_a_corrupt_int8_file_falls_back_to_fp32_and_says_why(quantised, tmp_path, caplog):
    (_int8_copy(quantised, tmp_path) / "model.onnx").write_bytes(b"not a model")
    _falls_back_to_fp32(caplog, tmp_path, "could not open")


def test_an_int8_file_whose_vectors_disagree_here_falls_back_to_fp32(quantised, tmp_path, caplog):
    target = _int8_copy(quantised, tmp_path)
    manifest = json.loads((target / "verified.json").read_text())
    manifest["references"][1] = [value + 1e-3 for value in manifest["references"][1]]
    (target / "verified.json").write_text(json.dumps(manifest))
    _falls_back_to_fp32(caplog, tmp_path, "differ from the references stored at quantisation")


def test_an_absent_int8_file_is_quantised_again_and_logged(quantised, tmp_path, caplog):
    shutil.rmtree(_int8_copy(quantised, tmp_path))
    embedder = LocalEmbedder(batch_size=8, data_dir=tmp_path, precision="int8")
    with caplog.at_level(logging.INFO, logger="memories.embeddings.onnx"):
        assert embedder.name == INT8 and embedder.fallback_reason == ""
    assert any("quantised" in record.getMessage() for record in caplog.records if record.name.endswith("onnx"))
    assert float(np.max(np.abs(np.asarray(embedder.embed_one(ROW)) - quantised.encode(ROW)))) < 1e-6


def test_a_batch_the_int8_file_fails_on_is_not_embedded_by_torch_under_the_int8_id(int8):
    assert int8.prepare_query_encoder() == "onnx"
    encoder = int8._query_encoder

    class BrokenSession:  # an outside runtime failing, not our database or queue
        def run(self, *args, **kwargs):
            raise RuntimeError("out of memory")

    working, encoder.session = encoder.session, BrokenSession()
    try:
        with pytest.raises(embedders.EmbeddingError, match="all-MiniLM-L6-v2-int8 failed: out of memory") as raised:
            int8.embed([ROW])
        assert raised.value.transient  # the batch is tried again later, by the int8 file
        with pytest.raises(embedders.EmbeddingError, match="out of memory"):
            int8.embed_one(QUESTION)
    finally:
        encoder.session = working
    assert len(int8.embed([ROW])[0]) == 384  # the positive control: the same call with the session working


def test_warm_up_reports_the_int8_id(int8):
    embedders._embedders.clear()
    try:
        report = embedders.embedder_warm_up(batch=True)
        assert report["model"] == INT8 and report["runtime"] == "onnx"
    finally:
        embedders._embedders.clear()


def test_an_int8_row_gets_the_vector_its_text_gets_alone_whatever_its_batch(int8, quantised):
    texts = [ROW, "ok", "Mona: " + "we hiked all day along the ridge and camped by the lake. " * 6, QUESTION]
    alone = np.stack([quantised.encode(text) for text in texts])
    assert float(np.max(np.abs(np.asarray(int8.embed(texts)) - alone))) < 1e-6
    # The positive control: batched together, int8's per-batch activation range moves them.
    batched = quantised.encode_many(texts, batch_size=len(texts))
    assert float(np.max(np.abs(batched - alone))) > onnx.TOLERANCE
