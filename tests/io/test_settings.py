"""rowformat.io.settings: the one form of store settings (Paimon's catalog
names), what each edge translates into it, what the leaf makes of it."""
import pytest

from rowformat.errors import StorageOptionError
from rowformat.io import settings as st
from rowformat.paimon import tables

SPELLINGS = {
    "s3.endpoint": ["endpoint", "endpoint-url", "endpoint_url"],
    "s3.access-key": ["access-key", "access.key", "accessKeyId", "accesskeyid"],
    "s3.secret-key": ["secret-key", "secret.key", "accessKeySecret"],
    "s3.session-token": ["session-token", "session.token", "security-token", "security.token",
                         "securityToken"],
    "s3.region": ["region", "endpoint.region"],
    "s3.path.style.access": ["path-style-access", "path.style.access"],
}
PREFIXES = ["s3.", "s3a.", "s3n.", "fs.s3.", "fs.s3a.", "fs.s3n.", "S3A.", "FS.S3A."]


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("name,spellings", SPELLINGS.items())
def test_every_spelling_of_an_s3_setting_is_its_catalog_name(prefix, name, spellings):
    for spelling in spellings:
        assert st.form({prefix + spelling: "v"}) == {name: "v"}


def test_pyarrow_names_with_a_catalog_name_take_it_the_others_stay():
    got = st.form({"endpoint_override": "h:1", "access_key": "k", "secret_key": "s",
                   "session_token": "t", "region": "r", "anonymous": True, "role_arn": "a"})
    assert got == {"s3.endpoint": "h:1", "s3.access-key": "k", "s3.secret-key": "s",
                   "s3.session-token": "t", "s3.region": "r", "anonymous": True, "role_arn": "a"}


def test_other_stores_settings_pass_as_pypaimon_spells_them():
    # Spark hands option names over lower-cased; pypaimon reads fs.oss.* case-sensitively
    assert st.form({"fs.oss.accesskeyid": "k", "gcs.project": "p", "hdfs.user": "u"}) == \
        {"fs.oss.accessKeyId": "k", "gcs.project": "p", "hdfs.user": "u"}


@pytest.mark.parametrize("key,suggestion", [
    ("s3.endpiont", "s3.endpoint"), ("fs.s3a.acess.key", "s3.access.key"),
    ("s3n.regoin", "s3.region"), ("s3.connection.ssl.enabled", None)])
def test_an_unknown_s3_name_is_an_error_naming_it_and_the_closest(key, suggestion):
    with pytest.raises(StorageOptionError) as e:
        st.form({key: "x"})
    assert f"storage option {key!r} is not an S3 setting" in str(e.value)
    if suggestion is not None:
        assert "did you mean" in str(e.value)
    assert isinstance(e.value, ValueError)


def test_an_unknown_plain_name_is_refused_at_the_s3_leaf():
    with pytest.raises(StorageOptionError, match=r"storage option 'endpoint_overide' is not an "
                                                 r"S3 setting; did you mean 'endpoint_override'\?"):
        st.s3_arguments({"endpoint_overide": "h:1"})


def test_two_spellings_of_one_setting_must_agree():
    assert st.form({"s3.region": "r", "fs.s3a.endpoint.region": "r"}) == {"s3.region": "r"}
    with pytest.raises(StorageOptionError, match=r"'s3.region' and 'fs.s3a.endpoint.region' both "
                                                 r"set s3.region, to different values"):
        st.form({"s3.region": "r", "fs.s3a.endpoint.region": "q"})


def test_the_leaf_gets_pyarrow_arguments_with_bounded_waits(monkeypatch):
    for k in list(__import__("os").environ):
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    got = st.s3_arguments({"fs.s3a.endpoint": "http://127.0.0.1:1234/", "s3.access-key": "k",
                           "s3a.secret.key": "s", "s3.path.style.access": "true",
                           "fs.oss.endpoint": "elsewhere", "anonymous": "false"})
    assert got == {"endpoint_override": "127.0.0.1:1234", "scheme": "http", "access_key": "k",
                   "secret_key": "s", "force_virtual_addressing": False, "anonymous": False,
                   "connect_timeout": st.CONNECT_TIMEOUT, "request_timeout": st.REQUEST_TIMEOUT}


def test_the_environment_is_read_in_one_place_and_under_what_is_given(monkeypatch):
    env = {"AWS_ENDPOINT_URL": "http://env:1", "AWS_ENDPOINT_URL_S3": "http://env-s3:1",
           "AWS_DEFAULT_REGION": "d", "AWS_REGION": "r", "AWS_ACCESS_KEY_ID": "ek",
           "AWS_SECRET_ACCESS_KEY": "es", "AWS_SESSION_TOKEN": "et"}
    assert st.environment(env) == {"s3.endpoint": "http://env-s3:1", "s3.path.style.access": "true",
                                   "s3.region": "r", "s3.access-key": "ek", "s3.secret-key": "es",
                                   "s3.session-token": "et"}
    assert st.environment({"AWS_ACCESS_KEY_ID": "k"}) == {}      # both keys, or none
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    # the same three results everywhere: the leaf, pypaimon's catalog options, Spark
    given = {"s3.endpoint": "http://given:2", "s3.access-key": "k", "s3.secret-key": "s"}
    got = st.s3_arguments(given)
    assert (got["endpoint_override"], got["access_key"], got["region"]) == ("given:2", "k", "r")
    assert "session_token" not in got and "force_virtual_addressing" not in got
    assert tables.catalog_options("s3://b/t", given) == {**given, "s3.region": "r"}
    assert tables.catalog_options("s3://b/t") == st.environment()
    assert tables.catalog_options("/local/t", given) == given     # no environment for a local table
    pytest.importorskip("pyspark")
    from rowformat.spark.options import storage_settings
    assert storage_settings({"paimon.s3.endpoint": "http://given:2", "paimon.s3.access-key": "k",
                             "paimon.s3.secret-key": "s"}) == {**given, "s3.region": "r"}


def test_a_spark_s3n_option_is_the_endpoint_not_dropped(monkeypatch):
    """paimon.s3n.endpoint: accepted by the Spark edge, then dropped by the
    storage layer's own, shorter list of prefixes (or refused with a bare
    ValueError), before there was one list."""
    pytest.importorskip("pyspark")
    for k in list(__import__("os").environ):
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    from rowformat.spark.options import file_options, storage_settings
    settings = storage_settings({"paimon.s3n.endpoint": "http://h:9", "paimon.fs.s3n.region": "r"})
    assert settings == {"s3.endpoint": "http://h:9", "s3.region": "r"}
    got = st.s3_arguments(file_options("s3n://b/f.row", settings))
    assert (got["endpoint_override"], got["scheme"], got["region"]) == ("h:9", "http", "r")
    with pytest.raises(StorageOptionError, match=r"'s3n.endpiont' is not an S3 setting; did you "
                                                 r"mean 's3.endpoint'\?"):
        storage_settings({"paimon.s3n.endpiont": "http://h:9"})


def test_the_prefix_list_is_one():
    assert all(p in st.PREFIXES for p in st.S3_PREFIXES)
    assert st.is_store_key("S3N.endpoint") and st.is_store_key("fs.oss.endpoint")
    assert not st.is_store_key("bucket") and not st.is_store_key("warehouse")


@pytest.mark.parametrize("key", ["anonymous", "role_arn", "retry_strategy"])
def test_a_table_refuses_a_setting_it_would_lose(key):
    # a table's store is opened by pypaimon's FileIO from catalog options, and
    # its settings are read back from them: pyarrow-only arguments have no
    # catalog name and would be dropped on the way, so they are refused
    with pytest.raises(StorageOptionError, match=f"'{key}' has no Paimon catalog name"):
        tables.catalog_options("s3://bucket/wh/t", {key: "x", "s3.endpoint": "http://h:1"})
    with pytest.raises(StorageOptionError, match=f"'{key}'"):
        tables.open_table("s3://bucket/wh/t", storage_options={key: "x"})
    # the same name is a pyarrow argument at the leaf, where it is not lost
    assert key in st.s3_arguments({key: "x"})
