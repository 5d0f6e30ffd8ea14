"""The one form of a store's settings, and its translations.

The form is a dict of Paimon catalog option names, as Paimon and pypaimon
spell them: ``s3.endpoint``, ``s3.access-key``, ``s3.secret-key``,
``s3.session-token``, ``s3.region``, ``s3.path.style.access``; other stores'
settings under their catalog prefixes (``fs.oss.*``, ``gcs.*``, ``hdfs.*``,
...), which only pypaimon's FileIO reads; and, for a URL's own filesystem,
its constructor's arguments (pyarrow's ``S3FileSystem`` arguments without a
catalog name, such as ``anonymous`` or ``role_arn``; for other schemes the
filesystem's own arguments).

Each edge translates into the form once (:func:`form`: the other spellings
of the same setting, ``fs.s3a.access.key``, ``s3n.endpoint``,
``endpoint_override``, ...; the Spark edge its session's Hadoop names), and
the leaf translates out of it once (:func:`s3_arguments`: pyarrow's names).
:data:`PREFIXES` is the one list of prefixes that name a store's setting,
:func:`environment` the one reader of the ``AWS_*`` variables. A name under
an S3 prefix that is no S3 setting, or a name an S3 filesystem does not
take, is a :class:`~rowformat.errors.StorageOptionError` naming it and the
closest valid name: never dropped in silence.
"""
from __future__ import annotations

import difflib
import os
from typing import Any, Mapping

from ..errors import StorageOptionError

# prefixes of S3 settings, the longest first (Hadoop's, pypaimon's, Paimon's)
S3_PREFIXES = ("fs.s3a.", "fs.s3n.", "fs.s3.", "s3a.", "s3n.", "s3.")
# prefixes of other stores' settings: pypaimon's FileIO reads them
OTHER_PREFIXES = ("fs.oss.", "fs.", "gcs.", "hdfs.", "security.kerberos.", "file-io.")
PREFIXES = S3_PREFIXES + OTHER_PREFIXES

ENDPOINT, ACCESS_KEY, SECRET_KEY, SESSION_TOKEN, REGION, PATH_STYLE = (
    "s3.endpoint", "s3.access-key", "s3.secret-key", "s3.session-token", "s3.region",
    "s3.path.style.access")
CREDENTIALS = (ACCESS_KEY, SECRET_KEY, SESSION_TOKEN)
S3_NAMES = (ENDPOINT, ACCESS_KEY, SECRET_KEY, SESSION_TOKEN, REGION, PATH_STYLE)

# every spelling (after an S3 prefix, lower-cased) -> the form's name
_S3_SPELLINGS = {
    "endpoint": ENDPOINT, "endpoint-url": ENDPOINT, "endpoint_url": ENDPOINT,
    "access-key": ACCESS_KEY, "access.key": ACCESS_KEY, "accesskeyid": ACCESS_KEY,
    "secret-key": SECRET_KEY, "secret.key": SECRET_KEY, "accesskeysecret": SECRET_KEY,
    "session-token": SESSION_TOKEN, "session.token": SESSION_TOKEN,
    "security-token": SESSION_TOKEN, "security.token": SESSION_TOKEN,
    "securitytoken": SESSION_TOKEN,
    "region": REGION, "endpoint.region": REGION,
    "path-style-access": PATH_STYLE, "path.style.access": PATH_STYLE,
}
# pyarrow's S3FileSystem arguments that have a catalog name
_PYARROW_NAMES = {"endpoint_override": ENDPOINT, "access_key": ACCESS_KEY,
                  "secret_key": SECRET_KEY, "session_token": SESSION_TOKEN, "region": REGION}
# ... and those that have none: kept in the form under their own names
_PYARROW_ONLY = {
    "anonymous", "request_timeout", "connect_timeout", "scheme", "background_writes",
    "default_metadata", "role_arn", "session_name", "external_id", "load_frequency",
    "proxy_options", "allow_bucket_creation", "allow_bucket_deletion",
    "check_directory_existence_before_creation", "retry_strategy", "force_virtual_addressing"}
_BOOLEANS = {"anonymous", "background_writes", "allow_bucket_creation", "allow_bucket_deletion",
             "force_virtual_addressing", "check_directory_existence_before_creation"}
# pypaimon reads these case-sensitively; Spark hands option names over lower-cased
_CASED = {k.lower(): k for k in (
    "fs.oss.accessKeyId", "fs.oss.accessKeySecret", "fs.oss.securityToken")}

# bounded waits: a dead endpoint fails in seconds (pypaimon's own FileIO asks
# for 10 attempts of 60 s each)
CONNECT_TIMEOUT = 5.0
REQUEST_TIMEOUT = 30.0
MAX_ATTEMPTS = 3


def _s3_prefix(key: str) -> str | None:
    low = key.lower()
    return next((p for p in S3_PREFIXES if low.startswith(p)), None)


def is_store_key(key: str) -> bool:
    """A catalog option naming a store's setting (under :data:`PREFIXES`)."""
    return key.lower().startswith(PREFIXES)


def _unknown(key: str, what: str) -> StorageOptionError:
    known = list(S3_NAMES) + sorted(_PYARROW_NAMES) + sorted(_PYARROW_ONLY)
    prefix = _s3_prefix(key)
    probe = "s3." + key[len(prefix):] if prefix else key
    close = difflib.get_close_matches(probe.lower(), known, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return StorageOptionError(
        f"{what} {key!r} is not an S3 setting{hint} (the S3 settings are "
        f"{', '.join(S3_NAMES)}, in their s3a./fs.s3a./... spellings too, and pyarrow "
        f"S3FileSystem's arguments)")


def canonical(key: str, what: str = "storage option") -> str:
    """The form's name of a setting's ``key``: an S3 setting in any of its
    spellings as its ``s3.`` name (an unknown name under an S3 prefix is a
    StorageOptionError), a pyarrow argument with a catalog name as that
    name, anything else as given (pypaimon's camel-case names restored)."""
    prefix = _s3_prefix(key)
    if prefix is not None:
        name = _S3_SPELLINGS.get(key[len(prefix):].lower())
        if name is None:
            raise _unknown(key, what)
        return name
    return _PYARROW_NAMES.get(key) or _CASED.get(key.lower(), key)


def form(options: Mapping[str, Any] | None, what: str = "storage option") -> dict:
    """``options`` (a user's storage_options, a catalog's store settings)
    in the one form: names :func:`canonical`, values as given (None values
    left out). Two spellings of one setting are a StorageOptionError."""
    out: dict = {}
    spelt: dict[str, str] = {}
    for key, value in (options or {}).items():
        if not isinstance(key, str):
            raise StorageOptionError(f"{what} {key!r}: names are strings")
        name = canonical(key, what)
        if value is None:
            continue
        if name in spelt and spelt[name] != key and out[name] != value:
            raise StorageOptionError(f"{what}s {spelt[name]!r} and {key!r} both set {name}, "
                                     f"to different values: give one")
        spelt[name] = key
        out[name] = value
    return out


def for_catalog(options: Mapping[str, Any] | None, what: str = "storage option") -> dict:
    """``options`` in the form, for a Paimon catalog's options (a table's
    FileIO is opened with them and its settings read back from them): the
    names under :data:`PREFIXES` only. A filesystem argument without a
    catalog name (pyarrow's ``anonymous``, ``role_arn``, ...) would be lost on
    the way, so it is a StorageOptionError naming it."""
    out = form(options, what)
    lost = sorted(k for k in out if not is_store_key(k))
    if lost:
        raise StorageOptionError(
            f"{what} {lost[0]!r} has no Paimon catalog name, and a table's store is opened "
            f"by those alone: give its settings as {', '.join(S3_NAMES)} (or fs.oss.*, gcs.*, "
            f"... for other stores)")
    return out


def of_catalog(options: Mapping[str, Any]) -> dict:
    """The store's settings among a Paimon catalog's options (those under
    :data:`PREFIXES`), in the form."""
    return form({k: v for k, v in options.items() if is_store_key(k)}, "catalog option")


def environment(environ: Mapping[str, str] | None = None) -> dict:
    """The S3 settings of the standard ``AWS_*`` variables, in the form: the
    endpoint (``AWS_ENDPOINT_URL_S3``, else ``AWS_ENDPOINT_URL``; then
    path-style addressing, as S3-compatible servers expect), the region
    (``AWS_REGION``, else ``AWS_DEFAULT_REGION``), and the keys
    (``AWS_ACCESS_KEY_ID`` with ``AWS_SECRET_ACCESS_KEY``, both or none, and
    ``AWS_SESSION_TOKEN``). The one reader of these variables."""
    env = os.environ if environ is None else environ
    out = {}
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        out[ENDPOINT] = endpoint
        out[PATH_STYLE] = "true"
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
    if region:
        out[REGION] = region
    if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
        out[ACCESS_KEY] = env["AWS_ACCESS_KEY_ID"]
        out[SECRET_KEY] = env["AWS_SECRET_ACCESS_KEY"]
        if env.get("AWS_SESSION_TOKEN"):
            out[SESSION_TOKEN] = env["AWS_SESSION_TOKEN"]
    return out


def merge(*layers: Mapping[str, Any]) -> dict:
    """Settings in the form, each layer over the ones before it: the keys
    (access key, secret, session token) taken together from the last layer
    that has an access key; a layer's endpoint drops lower layers' path
    style (the one goes with the other)."""
    out: dict = {}
    credentials: dict = {}
    for layer in layers:
        if ACCESS_KEY in layer:
            credentials = {k: layer[k] for k in CREDENTIALS if k in layer}
        if ENDPOINT in layer:
            out.pop(PATH_STYLE, None)
        out.update((k, v) for k, v in layer.items() if k not in CREDENTIALS)
    out.update(credentials)
    return out


def with_environment(settings: Mapping[str, Any]) -> dict:
    """An S3 store's settings (in the form) over the ``AWS_*`` environment's."""
    return merge(environment(), settings)


def truthy(v: Any) -> bool:
    return v if isinstance(v, bool) else str(v).strip().lower() in ("1", "true", "yes", "on")


def s3_arguments(settings: Mapping[str, Any] | None) -> dict:
    """The form's settings (over the environment's) as pyarrow
    ``S3FileSystem`` arguments, with bounded timeouts and retries unless
    given: the one translation to the leaf. An endpoint with a scheme
    (``http://host:port``) sets ``scheme`` too. Other stores' settings are
    not this store's (left to pypaimon); a name that is neither is a
    StorageOptionError."""
    out: dict[str, Any] = {}
    for key, value in with_environment(form(settings)).items():
        if key == PATH_STYLE:
            out["force_virtual_addressing"] = not truthy(value)
        elif key in S3_NAMES:
            out[{v: k for k, v in _PYARROW_NAMES.items()}[key]] = value
        elif key in _BOOLEANS:
            out[key] = truthy(value)
        elif key in ("connect_timeout", "request_timeout"):
            out[key] = float(value)
        elif key in _PYARROW_ONLY:
            out[key] = value
        elif not is_store_key(key):
            raise _unknown(key, "storage option")
    endpoint = out.get("endpoint_override")
    if isinstance(endpoint, str) and "://" in endpoint:
        scheme, _, rest = endpoint.partition("://")
        out.setdefault("scheme", scheme)
        out["endpoint_override"] = rest.rstrip("/")
    out.setdefault("connect_timeout", CONNECT_TIMEOUT)
    out.setdefault("request_timeout", REQUEST_TIMEOUT)
    return out


def filesystem_arguments(settings: Mapping[str, Any] | None) -> dict:
    """The form's settings a filesystem of a store other than S3 takes: its
    own arguments (catalog settings, under :data:`PREFIXES`, are
    pypaimon's FileIO's)."""
    return {k: v for k, v in (settings or {}).items() if not is_store_key(k)}
