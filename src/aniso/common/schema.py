"""The base of every registry schema: frozen pydantic models that reject unknown keys."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Strict"]


class Strict(BaseModel):
    """A frozen pydantic model with ``extra="forbid"``: a misspelt key is an error naming it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
