"""OpenAPI descriptions of Archivist's authentication, for drf-spectacular."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "config.api.BearerTokenAuthentication"
    name = "agentToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An agent's token (`manage.py create_agent`); it names the organisation and the agent.",
        }


class MemberSessionScheme(OpenApiAuthenticationExtension):
    target_class = "config.api.MemberSessionAuthentication"
    name = "accountSession"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "cookie", "name": "sessionid", "description": "An account holder's session."}
