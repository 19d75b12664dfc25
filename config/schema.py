"""What drf-spectacular cannot infer: the authentication schemes, and the rules validation enforces."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema

from lib.api.errors import ERROR_CODES
from lib.api.idempotency import IDEMPOTENCY_HEADER, IDEMPOTENCY_KEY_PATTERN
from threads.models import THREAD_ID_PATTERN


class BodiedDeleteSchema(AutoSchema):
    """drf-spectacular's schema, with the body a DELETE declares (forgetting takes a reason and a place).

    drf-spectacular documents a request body for PUT, PATCH and POST only; a DELETE that names its request
    serializer reads that body, so the schema says so, and clients generated or checked against it see it."""

    def _get_request_body(self, direction="request"):
        if self.method != "DELETE" or self.get_request_serializer() is None:
            return super()._get_request_body(direction)
        self.method = "POST"  # the parent asks the method only to decide whether a body may exist
        try:
            return super()._get_request_body(direction)
        finally:
            self.method = "DELETE"


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.auth.BearerTokenAuthentication"
    name = "agentToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An agent's token (`manage.py create_agent`); it names the organisation and the agent.",
        }


class MemberSessionScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.auth.MemberSessionAuthentication"
    name = "accountSession"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "cookie", "name": "sessionid", "description": "An account holder's session."}


# --- What validation enforces, said by the schema too -----------------------------------

ERROR_CODE_SCHEMA = {
    "type": "string",
    "enum": list(ERROR_CODES),
    "description": "What refused the request; each code is one error class in the clients.",
}
ERROR_SCHEMA = {
    "type": "object",
    "required": ["error", "detail", "fields"],
    "properties": {
        "error": {"$ref": "#/components/schemas/ErrorCode"},
        "detail": {"type": "string", "example": "body: Must be a string, not an integer."},
        "fields": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
            "example": {"body": ["Must be a string, not an integer."]},
        },
    },
}
# Every operation may answer these, in the one error shape (lib.api.errors.exception_handler).
ERROR_RESPONSES = {
    "400": "A field, parameter or header is wrong; it is named in `fields`.",
    "401": "No credentials, or a token that is unknown, revoked or expired.",
    "403": "The caller may not do this here.",
    "404": "Nothing the caller can see has this id.",
    "413": "The body is larger than the API reads.",
    "415": "The body is not application/json.",
    "429": "Too many requests for this token; see Retry-After.",
}
HTTP_METHODS = ("get", "put", "post", "delete", "patch")
# Rules across fields that a request schema can still say.
NOT_BOTH = {"not": {"required": ["expires_at", "ttl_days"]}}
OBJECT_RULES = {"RememberInputRequest": NOT_BOTH, "SupersedeInputRequest": NOT_BOTH}


def _parameter_rules() -> dict[tuple[str, str], dict]:
    return {
        ("path", "subject_type"): {"type": "string", "enum": ["candidate", "user"]},
        ("path", "thread_id"): {"type": "string", "pattern": THREAD_ID_PATTERN},
        ("header", IDEMPOTENCY_HEADER): {"type": "string", "pattern": IDEMPOTENCY_KEY_PATTERN.pattern},
        ("query", "page_size"): {"type": "integer", "minimum": 1},
    }


def strict_requests(result, generator, request, public):
    """drf-spectacular postprocessing hook: the schema says what validation enforces.

    - every request body object refuses properties it does not declare (`StrictSerializer`);
    - every operation documents the error answers it can give, in the one error shape;
    - path, header and query parameters carry the patterns, enums and bounds the views check.
    """
    components = result.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in components.items():
        if name.endswith("Request") and schema.get("type") == "object":
            schema["additionalProperties"] = False
            schema.update(OBJECT_RULES.get(name, {}))
    components["ErrorCode"] = ERROR_CODE_SCHEMA
    components["Error"] = ERROR_SCHEMA
    rules = _parameter_rules()
    for item in result.get("paths", {}).values():
        for method, operation in item.items():
            if method not in HTTP_METHODS:
                continue
            responses = operation.setdefault("responses", {})
            for code, description in ERROR_RESPONSES.items():
                answer = responses.setdefault(code, {"description": description})
                answer.setdefault("content", {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}})
            for parameter in operation.get("parameters", []):
                rule = rules.get((parameter.get("in"), parameter.get("name")))
                if rule:
                    parameter["schema"] = {**parameter.get("schema", {}), **rule}
                elif parameter.get("in") == "query" and parameter.get("schema", {}).get("type") == "string":
                    # config.middleware refuses a NUL byte in any query parameter.
                    parameter["schema"].setdefault("pattern", "^[^\\u0000]*$")
    return result
