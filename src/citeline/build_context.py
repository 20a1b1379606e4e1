"""What a backend factory may ask for: the settings and the components it depends on.

Every factory has the shape ``factory(context, argument) -> backend`` (registry.py); the context
builds each component on first use (wiring.py:Components), or hands over ready-made parts
(StaticContext). This module sits above the contracts it names, below every backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

from citeline.errors import ConfigError

if TYPE_CHECKING:
    from citeline.chat import ChatModel
    from citeline.embedding.base import Embedder
    from citeline.index.base import Store
    from citeline.settings import Settings


class PassageReader(Protocol):
    """The trained reader (answer/reader.py:Reader), one per context: the refusal guard and the
    extractive generator share its last readings."""

    name: str


class BuildContext(Protocol):
    """What a factory may ask for; components are built on first use."""

    @property
    def settings(self) -> Settings: ...

    @property
    def embedder(self) -> Embedder: ...

    @property
    def store(self) -> Store: ...

    @property
    def chat_model(self) -> ChatModel: ...

    @property
    def reader(self) -> PassageReader | None: ...


@dataclass(frozen=True)
class StaticContext:
    """A BuildContext of ready-made parts, for building a backend outside an index (tests,
    evaluation scripts). A part left as None raises ConfigError when a backend asks for it."""

    settings_: Settings | None = None
    embedder_: Any = None
    store_: Any = None
    chat_model_: Any = None
    reader_: Any = None

    def _need(self, value: Any, what: str) -> Any:
        if value is None:
            raise ConfigError(f"This backend needs {what}, and none was given.")
        return value

    @property
    def settings(self) -> Settings:
        from citeline.settings import Settings

        return self.settings_ or Settings()

    @property
    def embedder(self) -> Embedder:
        return cast("Embedder", self._need(self.embedder_, "an embedder"))

    @property
    def store(self) -> Store:
        return cast("Store", self._need(self.store_, "a store"))

    @property
    def chat_model(self) -> ChatModel:
        return cast(
            "ChatModel", self._need(self.chat_model_, "a chat model (chat_model or an LLM generator)")
        )

    @property
    def reader(self) -> PassageReader | None:
        return cast("PassageReader | None", self.reader_)
