"""OpenAI's chat fine-tuning line format as a pydantic model (from the platform docs: supervised
fine-tuning and vision fine-tuning data format): one JSON object per line with `messages`; roles
system / user / assistant; content a string or a list of parts `{"type": "text", "text"}` and
`{"type": "image_url", "image_url": {"url", "detail"?}}`; images only in user messages, given as an
HTTP(S) URL or a base64 data URL of a JPEG, PNG or WEBP; at most 10 images per example."""
from __future__ import annotations

import base64
import re
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

DATA_URL = re.compile(r"^data:image/(jpeg|png|webp);base64,([A-Za-z0-9+/]+={0,2})$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TextPart(_Strict):
    type: Literal["text"]
    text: str


class ImageURL(_Strict):
    url: str
    detail: Literal["auto", "low", "high"] | None = None

    @field_validator("url")
    @classmethod
    def _data_or_http(cls, url: str) -> str:
        if url.startswith(("https://", "http://")):
            return url
        match = DATA_URL.match(url)
        if not match:
            raise ValueError("an image must be an http(s) URL or a base64 data URL of a JPEG, PNG or WEBP")
        if len(base64.b64decode(match.group(2), validate=True)) > 10 * 1024 * 1024:
            raise ValueError("an image may be at most 10 MB")
        return url


class ImagePart(_Strict):
    type: Literal["image_url"]
    image_url: ImageURL


Part = Annotated[Union[TextPart, ImagePart], Field(discriminator="type")]


class SystemMessage(_Strict):
    role: Literal["system"]
    content: str | list[TextPart]


class UserMessage(_Strict):
    role: Literal["user"]
    content: str | list[Part]


class AssistantMessage(_Strict):
    role: Literal["assistant"]
    content: str
    weight: Literal[0, 1] | None = None


Message = Annotated[Union[SystemMessage, UserMessage, AssistantMessage], Field(discriminator="role")]


class ChatFineTuningLine(_Strict):
    messages: list[Message] = Field(min_length=2)

    @model_validator(mode="after")
    def _shape(self):
        if not isinstance(self.messages[-1], AssistantMessage):
            raise ValueError("the last message must be the assistant's answer")
        images = sum(isinstance(p, ImagePart) for m in self.messages if isinstance(m.content, list) for p in m.content)
        if images > 10:
            raise ValueError("at most 10 images per example")
        return self
