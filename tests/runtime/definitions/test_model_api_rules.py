"""A model definition's ``api`` and ``providerTools`` are refused unless the runtime honours them."""

from runtime.core.spec import ModelDefinition
from runtime.definitions.validation import validate_model


def _errors(**fields: object) -> dict[str, str]:
    model = ModelDefinition.model_validate({"name": "m", "model": "x", **fields})
    return {e.path: e.message for e in validate_model(model)}


def test_api_is_for_openai_models_only() -> None:
    assert "api" in _errors(provider="anthropic", api="chat")
    assert "api" not in _errors(provider="openai", api="chat")


def test_provider_tools_must_be_offered_by_the_provider() -> None:
    errors = _errors(provider="anthropic", providerTools=["no_such_tool"])
    assert "no_such_tool" in errors["providerTools.0"]


def test_provider_tools_round_trip_through_the_definition() -> None:
    model = ModelDefinition.model_validate(
        {"name": "m", "provider": "openai", "model": "x", "providerTools": ["t"], "api": "chat"}
    )
    assert model.dump()["providerTools"] == ["t"]
    assert model.dump()["api"] == "chat"


def test_openai_models_may_choose_the_responses_api() -> None:
    assert "api" not in _errors(provider="openai", api="responses")
