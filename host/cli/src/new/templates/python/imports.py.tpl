import json
from typing import Optional

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import log, registry
from wit_world.imports.assembly import Assembly
from wit_world.imports.types import (
    AssembleContext,
    PluginError_Failed,
    PluginError_InvalidInput,
    ToolSchema,
    ToolSet,
)
