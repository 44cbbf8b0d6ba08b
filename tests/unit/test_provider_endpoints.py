"""Which endpoints say what model they serve (served_models.is_providers): a rule over URL
strings. Nothing is contacted: the hosts are only classified, and the ones that are not
OpenAI's are under `.invalid` (RFC 2606), which never resolves."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rt4chart.transforms.judges.openai.config import OpenAIConfig
from rt4chart.transforms.judges.openai.served_models import is_providers


@given(st.sampled_from(["https://api.openai.com/v1", "https://API.OpenAI.com/v1/",
                        None, "http://127.0.0.1:8080/v1", "http://localhost:11434/v1",
                        "https://llm.internal.invalid/v1", "https://api.openai.com.invalid/v1"]),
       st.booleans())
def test_only_openai_and_azure_are_the_providers(base_url, azure):
    config = OpenAIConfig(base_url=base_url, azure_api_version="2024-10-21" if azure else None)
    host = (base_url or "").lower()
    expected = azure or base_url is None or host.startswith("https://api.openai.com/")
    assert is_providers(config) is expected
