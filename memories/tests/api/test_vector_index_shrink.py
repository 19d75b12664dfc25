"""A tenant that shrinks far below the HNSW threshold loses its index at the next maintenance sweep."""

from __future__ import annotations

import numpy as np
from django.db import connection

from accounts.services import organisation_create
from memories.models import Memory, TenantVectorIndex
from memories.recall.hnsw import index_name_for, vector_index_maintain
from memories.tests.api.test_vector_index import seed


def test_a_tenant_that_shrinks_far_below_the_threshold_loses_its_index(transactional_db):
    shrinking = organisation_create(slug="vector-shrinking")
    rng = np.random.default_rng(3)
    seed(shrinking, 60, rng=rng, centroids=rng.standard_normal((5, 384)))
    assert vector_index_maintain(threshold=55)["built"] == [str(shrinking.pk)]
    assert TenantVectorIndex.objects.get(organisation=shrinking).state == "ready"
    Memory.objects.filter(organisation=shrinking).update(embedding=None, embedding_model="")
    assert vector_index_maintain(threshold=55)["dropped"] == [str(shrinking.pk)]
    assert not TenantVectorIndex.objects.filter(organisation=shrinking).exists()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_indexes WHERE indexname = %s", [index_name_for(shrinking.pk)])
        assert cursor.fetchone()[0] == 0
