"""What every model of a file the user writes shares (the config's sections, the pipeline
file): unknown keys are errors, and each field's docstring is its documentation, from which the
docs' reference is generated. A module of its own, below everything, so that the partition
scheme (`partitions.PartitionSpec`) needs nothing of the config package."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

COLUMN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # a plain column name


class Strict(BaseModel):
    # The string under each field is its documentation: pydantic keeps it as the field's
    # description, and the docs' config reference is generated from it.
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
