"""The deterministic router's exemplar step with a stand-in embedder: which close calls it decides
itself and which it leaves to the router model."""

from __future__ import annotations

import numpy as np

from harness.routing import EXEMPLARS, MARGIN, ExemplarRouter, by_rules

INTENTS = list(EXEMPLARS)


def _embedder(question_scores: dict[str, float]):  # type: ignore[no-untyped-def]
    """Exemplars of each intent on their own axis; the question's cosine to each axis as given."""
    axis = {intent: np.eye(4, dtype=np.float32)[i] for i, intent in enumerate(INTENTS)}
    owner = {text: intent for intent, texts in EXEMPLARS.items() for text in texts}

    async def embed(texts: list[str]) -> np.ndarray:
        rows = []
        for t in texts:
            if t in owner:
                rows.append(axis[owner[t]])
            else:
                v = sum(question_scores.get(i, 0.0) * axis[i] for i in INTENTS)
                rest = max(1e-6, 1 - float(np.dot(v, v)))
                rows.append(v + np.sqrt(rest) * np.eye(4, dtype=np.float32)[3])
        return np.stack(rows)

    return embed


async def test_a_clear_winner_decides() -> None:
    decided = await ExemplarRouter(_embedder({"DIAGNOSIS": 0.8, "OTHER": 0.3})).decide("q")
    assert decided is not None and decided.intent == "DIAGNOSIS"


async def test_a_close_call_leaning_to_chat_is_chat_without_the_model() -> None:
    close = MARGIN / 2
    decided = await ExemplarRouter(_embedder({"OTHER": 0.5, "DIAGNOSIS": 0.5 - close})).decide("q")
    assert decided is not None and decided.intent == "OTHER" and "no incident vocabulary" in decided.detail
    decided = await ExemplarRouter(_embedder({"CHITCHAT": 0.5, "OTHER": 0.5 - close})).decide("q")
    assert decided is not None and decided.intent == "CHITCHAT"


async def test_a_close_call_leaning_to_diagnosis_goes_to_the_model() -> None:
    close = MARGIN / 2
    assert await ExemplarRouter(_embedder({"DIAGNOSIS": 0.5, "OTHER": 0.5 - close})).decide("q") is None


def test_incident_vocabulary_wins_over_a_greeting() -> None:
    decided = by_rules("hi, checkout returns 502 since 10:05")
    assert decided is not None and decided.intent == "DIAGNOSIS"
    assert by_rules("讲个故事吧") is None  # neither rule: the exemplars decide
