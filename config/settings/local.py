"""A server on this machine: what `make run` and `manage.py` use unless DJANGO_SETTINGS_MODULE says otherwise.

DEBUG is off, so a missing page is the site's own page and nothing shows the URL map or a traceback. The secret
key is made once into the data folder (DJANGO_SECRET_KEY overrides it). Secure cookies, the HTTPS redirect and
HSTS apply only when ARCHIVIST_PUBLIC_URL is https: on http://127.0.0.1 they would lock a browser out.
`config.settings.dev` keeps DEBUG on and the fixed development key.
"""

from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_int, env_str
from config.secret_key import data_folder_secret_key
from config.settings.base import *  # noqa: F403
from config.settings.base import ALLOWED_HOSTS, CSRF_TRUSTED_ORIGINS, DATA_DIR

DEBUG = env_bool("DJANGO_DEBUG", False)
SECRET_KEY = env_str("DJANGO_SECRET_KEY", "") or data_folder_secret_key(DATA_DIR)

PUBLIC_URL = env_str("ARCHIVIST_PUBLIC_URL", "")
_public = urlsplit(PUBLIC_URL)
if PUBLIC_URL and (_public.scheme not in ("http", "https") or not _public.hostname):
    raise ImproperlyConfigured(f"ARCHIVIST_PUBLIC_URL must be an http:// or https:// address, not {PUBLIC_URL!r}.")
if _public.hostname and _public.hostname not in ALLOWED_HOSTS:
    ALLOWED_HOSTS = [*ALLOWED_HOSTS, _public.hostname]
    CSRF_TRUSTED_ORIGINS = [*CSRF_TRUSTED_ORIGINS, f"{_public.scheme}://{_public.netloc}"]

SERVED_OVER_HTTPS = _public.scheme == "https"
SESSION_COOKIE_SECURE = SERVED_OVER_HTTPS
CSRF_COOKIE_SECURE = SERVED_OVER_HTTPS
SECURE_SSL_REDIRECT = SERVED_OVER_HTTPS
if SERVED_OVER_HTTPS:
    # Behind the TLS-terminating proxy the public URL implies, which says the scheme in this header.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    # HSTS promises HTTPS for its lifetime, so it starts only with an https public URL.
    SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 31_536_000, minimum=0)
