"""Rows embedded in batches through ONNX Runtime: the vectors torch's `encode` gives, padded or not,
in the rows' order; a batch ONNX fails on is embedded by torch, and the log says so."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from django.conf import settings

from memories.embeddings import embedders, onnx
from memories.embeddings.embedders import LocalEmbedder

# Lengths from one token to past the 256-token cut, unsorted, so every batch pads and is reordered.
TEXTS = [
    "Melanie: " + "We went camping by the lake and the kids loved roasting marshmallows. " * 3,
    "hi",
    "why " * 300,
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "ok!",
    "Max: Did you get the tickets for the 8:30pm show on 2023-07-14? They were $45 each.",
    "東京で会いましょう。 Давай встретимся в Москве.",
    "Mona: thanks",
    "Qu'est-ce que tu as mangé à Zürich ? Ein Käsefondue, natürlich.",
]


# One worker runs this module, so its tests share the torch model and the export its fixtures load once.
pytestmark = pytest.mark.xdist_group("batch_embedding_runtime")


@pytest.fixture(scope="module")
def exported():
    return onnx.load(settings.DATA_DIR)


@pytest.fixture(scope="module")
def torch_vectors():
    model = embedders._load_local_model()
    return model.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True, batch_size=64)


@pytest.mark.parametrize("batch_size", [1, 3, 16])
def test_padded_batches_give_the_vectors_torch_gives_in_the_rows_order(exported, torch_vectors, batch_size):
    vectors = exported.encode_many(TEXTS, batch_size=batch_size)
    assert vectors.shape == (len(TEXTS), 384)
    assert float(np.max(np.abs(vectors - torch_vectors))) < onnx.TOLERANCE
    # The positive control: the rows are not all alike, so a reordering would show.
    assert float(np.max(np.abs(vectors[1] - torch_vectors[2]))) > 0.1


def test_the_worker_path_embeds_through_onnx_when_it_was_chosen(exported, torch_vectors):
    embedder = LocalEmbedder(batch_size=64)
    assert embedder.prepare_query_encoder() == "onnx"
    vectors = np.asarray(embedder.embed(TEXTS))
    assert float(np.max(np.abs(vectors - torch_vectors))) < onnx.TOLERANCE


def test_a_batch_onnx_fails_on_is_embedded_by_torch_and_logged(exported, torch_vectors, caplog):
    embedder = LocalEmbedder(batch_size=64)
    assert embedder.prepare_query_encoder() == "onnx"
    encoder = embedder._query_encoder
    assert encoder is not None

    class BrokenSession:  # an outside runtime failing, not our database or queue
        def run(self, *args, **kwargs):
            raise RuntimeError("out of memory")

    working, encoder.session = encoder.session, BrokenSession()
    try:
        with caplog.at_level(logging.WARNING, logger="memories.embeddings.embedders"):
            vectors = np.asarray(embedder.embed(TEXTS[:3]))
    finally:
        encoder.session = working
    assert float(np.max(np.abs(vectors - torch_vectors[:3]))) < 1e-6  # torch's own vectors
    said = [record.getMessage() for record in caplog.records]
    assert any("ONNX Runtime failed on a batch of 3 texts" in message for message in said), said
