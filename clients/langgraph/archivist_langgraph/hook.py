"""A pre-model hook that renders the turn's memory block into the prompt and records the injection.

`render_hook(client, place=...)` returns a callable for LangGraph's `pre_model_hook` (and usable as a plain
node): it asks Archivist to render the block for this turn (recorded under the turn id, so the injection can
be read and replayed later), and hands the model the block as a system message before the conversation,
without changing the conversation kept in the state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from archivist_client import Archivist
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage


def _last_question(messages: list[BaseMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            content = message.content
            return content if isinstance(content, str) else " ".join(str(part) for part in content)
    return ""


def render_hook(
    client: Archivist,
    *,
    place: Mapping[str, Any] | None = None,
    turn_id: Callable[[dict, dict], str] | None = None,
) -> Callable[..., dict]:
    """The hook. The place is `config["configurable"]["place"]`, else `place`, else the client's default;
    the turn id is `turn_id(state, config)`, else `config["configurable"]["turn_id"]`, else
    `<thread_id>:<number of messages>`."""

    def hook(state: dict, config: dict | None = None) -> dict:
        configurable = (config or {}).get("configurable", {})
        messages = list(state["messages"])
        if turn_id is not None:
            turn = turn_id(state, config or {})
        else:
            turn = configurable.get("turn_id") or f"{configurable.get('thread_id', 'thread')}:{len(messages)}"
        block = client.render(
            turn_id=str(turn),
            question=_last_question(messages),
            place=configurable.get("place") or place,
        )
        prompt = [SystemMessage(content=block.text)] if block.text else []
        return {"llm_input_messages": [*prompt, *messages]}

    return hook
