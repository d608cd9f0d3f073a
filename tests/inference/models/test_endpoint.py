"""The endpoint as the answer-store key spells it, and the spellings stores were keyed by before."""

from __future__ import annotations

import pytest

from probmed.core.errors import ConfigError
from probmed.inference.models.endpoint import DEFAULT_BASE_URL, check_base_url, endpoint_key, former_spellings


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8000/v1", "http://localhost:8000/v1", "http://LOCALHOST:8000/v1/", "HTTP://127.0.0.1:8000//v1//",
    "http://[::1]:8000/v1", "http://0.0.0.0:8000/v1", "http://user:pw@localhost:8000/v1",
])
def test_spellings_of_one_local_server_are_one_key(url):
    assert endpoint_key(url) == "http://127.0.0.1:8000/v1"


@pytest.mark.parametrize("url", [None, "", DEFAULT_BASE_URL, "https://api.openai.com/v1/", "HTTPS://API.OPENAI.COM:443/v1"])
def test_the_default_api_is_keyed_as_no_base_url(url):
    assert endpoint_key(url) is None


def test_what_tells_endpoints_apart_stays_in_the_key():
    assert endpoint_key("http://127.0.0.1:8001/v1") != endpoint_key("http://127.0.0.1:8000/v1")
    assert endpoint_key("https://gw.example/v1") != endpoint_key("http://gw.example/v1")
    assert endpoint_key("https://gw.example/v2") != endpoint_key("https://gw.example/v1")
    assert endpoint_key("http://gw.example:80/v1") == endpoint_key("http://gw.example/v1")
    assert endpoint_key("https://gw.example/v1?api-version=1&key=s3cret99") == "https://gw.example/v1?api-version=1&key=***"


def test_former_spellings_are_todays_keys_of_the_same_endpoint():
    assert former_spellings("http://localhost:8000/v1/") == [
        "http://localhost:8000/v1", "http://[::1]:8000/v1", "http://0.0.0.0:8000/v1"]
    assert former_spellings("http://127.0.0.1:8000/v1") == [
        "http://localhost:8000/v1", "http://[::1]:8000/v1", "http://0.0.0.0:8000/v1"]
    assert former_spellings(None) == [DEFAULT_BASE_URL, "https://api.openai.com:443/v1"]
    assert former_spellings("https://gw.example/v1") == ["https://gw.example:443/v1"]


@pytest.mark.parametrize("url", ["htp://h/v1", "h:8000/v1", "http:///v1", "http://h:99999/v1", "http://[::1/v1", " http://h/v1"])
def test_a_url_no_request_can_use_is_refused_naming_the_key(url):
    with pytest.raises(ConfigError, match="models.x.base_url"):
        check_base_url(url, "models.x.base_url")


def test_a_refused_url_with_credentials_is_not_printed():
    with pytest.raises(ConfigError) as err:
        check_base_url("htp://user:pa55w0rd@h/v1", "models.x.base_url")
    assert "pa55w0rd" not in str(err.value)


def test_every_command_refuses_a_base_url_no_request_can_use_before_any_work(repo_root, tmp_path, capsys):
    from probmed.cli import main

    out = tmp_path / "plan"
    assert main(["plan", "--params", str(repo_root / "params.yaml"), "--out-dir", str(out),
                 "models.gpt-4o.base_url=htp://gateway.example/v1"]) == 2
    err = capsys.readouterr().err
    assert "models.gpt-4o.base_url" in err and "http://" in err and not out.exists()
