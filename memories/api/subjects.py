"""Subject requests: everything held about one subject, listed, exported and erased."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions
from rest_framework.response import Response

from lib.api.docs import answered, asked, read_schema, write_schema
from lib.api.idempotency import plain_json
from memories.api import serializers as s
from memories.api.base import MemoryApi
from memories.api.docs import SUBJECT_ERASE_EXAMPLE, SUBJECT_EXPORT_EXAMPLE
from memories.models import SubjectType
from memories.scopes import subject_request_allowed
from memories.subjects import subject_erase, subject_export_document
from memories.turns.writes import user_subject_id

# What a subject request may be answered instead of its result, for export and erasure alike.
SUBJECT_REFUSALS = {
    400: OpenApiResponse(
        description="The subject type is neither `user` nor `candidate`, or a field is wrong; it is named."
    ),
    403: OpenApiResponse(
        description="A person's data is exported by that person and erased by them or an owner; a candidate's by "
        "owners and agents whose token is not restricted."
    ),
    404: OpenApiResponse(description="No such account in your organisation."),
}


class _SubjectApi(MemoryApi):
    action = "export"

    def subject(self, subject_type: str, subject_id: str) -> tuple[str, str]:
        if subject_type not in (SubjectType.CANDIDATE, SubjectType.USER):
            raise exceptions.ValidationError({"subject_type": ["A subject is a candidate or a user."]})
        principal = self.principal()
        principal.refuse_if_restricted("export or erase a subject")
        if subject_type == SubjectType.USER:
            try:
                subject_id = user_subject_id(organisation=principal.organisation, subject_id=subject_id)
            except Exception:  # noqa: BLE001 - any unknown account is simply not here
                raise exceptions.NotFound("No such account in your organisation.") from None
        if not subject_request_allowed(
            viewer=self.viewer(), subject_type=subject_type, subject_id=subject_id, action=self.action
        ):
            raise exceptions.PermissionDenied(
                "A person's data is exported by that person and erased by them or an owner; "
                "candidates' requests are handled by owners and agents."
            )
        return subject_type, subject_id


class SubjectMemoriesApi(_SubjectApi):
    action = "export"

    @read_schema(
        operation_id="subjects_export",
        responses={200: s.SubjectExportOutputSerializer, **SUBJECT_REFUSALS},
        examples=[answered("An export", SUBJECT_EXPORT_EXAMPLE)],
    )
    def get(self, request, subject_type, subject_id):
        """Everything held about a subject, oldest first, receipts included.

        A subject access export: every memory about a candidate or a user of the organisation, oldest first, erased
        ones as receipts. A person exports their own; owners and agents handle candidates.
        """
        principal = self.principal()
        subject_type, subject_id = self.subject(subject_type, subject_id)
        document = subject_export_document(
            organisation=principal.organisation, subject_type=subject_type, subject_id=subject_id, now=timezone.now()
        )
        return Response(
            document,
            headers={"Content-Disposition": f'attachment; filename="{subject_type}-{subject_id}-memories.json"'},
        )


class SubjectEraseApi(_SubjectApi):
    action = "erase"

    @write_schema(
        operation_id="subjects_erase",
        request=s.SubjectEraseInputSerializer,
        responses={200: s.SubjectEraseOutputSerializer, **SUBJECT_REFUSALS},
        examples=[
            asked("Why", {"reason": "Subject access request #77"}),
            answered("Erased", SUBJECT_ERASE_EXAMPLE),
        ],
    )
    def post(self, request, subject_type, subject_id):
        """Erase everything held about a subject; one receipt per row stays.

        Erases every memory about the subject, its vectors, its lines in injections, the thread events it was said in
        and what was learned only from them or quotes them, and what still names them: the source ref, label and run
        id of their rows, the label of their person scope, their display name. One receipt per memory stays, with
        ids, handles, kinds and times. A person or an owner erases a user; owners and agents a candidate.
        """
        principal = self.principal()
        data = self.validated(s.SubjectEraseInputSerializer)
        subject_type, subject_id = self.subject(subject_type, subject_id)

        def write():
            result = plain_json(
                subject_erase(
                    organisation=principal.organisation,
                    subject_type=subject_type,
                    subject_id=subject_id,
                    reason=data.get("reason", ""),
                    **self.actor(),
                )
            )
            # The answer holds counts, ids and reasons, never a memory's text: a retry gets it back as it was.
            return Response(result), None, {"result": result}

        return self.idempotent("subject-erase", write, lambda memory, extra: Response(extra["result"]))
