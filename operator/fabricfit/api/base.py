"""The base of every spec model: camelCase aliases, frozen, unknown fields rejected, and numbers
that are numbers (pure).

The spec models live in :mod:`fabricfit.api.models` (the TrainingTopology) and
:mod:`fabricfit.api.serving` (its serving description); both derive from :class:`SpecModel`, so
a field behaves the same wherever it is declared.
"""

from __future__ import annotations

import types
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

_NUMBER_ERRORS = {int: ("int_type", "integer"), float: ("float_type", "number")}


def _number_type(annotation: object) -> type | None:
    """``int`` or ``float`` when the field holds one (optionally ``None``), else None."""
    if annotation in _NUMBER_ERRORS:
        return annotation
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1 and args[0] in _NUMBER_ERRORS:
            return args[0]  # type: ignore[no-any-return]
    return None


class SpecModel(BaseModel):
    """Base for spec models: camelCase aliases, frozen, unknown fields rejected, and numbers
    that are numbers: a string ("8") or a boolean is refused as the API server refuses it
    (pydantic's lax mode would coerce them; 8.0 stays accepted as an integer, as the API
    server accepts it)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        extra="forbid",
    )

    @field_validator("*", mode="before")
    @classmethod
    def _numbers_are_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        kind = _number_type(field.annotation) if field is not None else None
        if kind is not None and isinstance(value, bool | str):
            error, words = _NUMBER_ERRORS[kind]
            raise PydanticCustomError(error, f"Input should be a valid {words}")
        return value
