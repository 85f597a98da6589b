"""Drives Switchboard's gRPC binding with the official a2a-sdk client.

Usage: sdk_client.py BASE_URL USER_TOKEN; prints one JSON object: the
interface the client factory chose from the card (binding, address,
tenant), a blocking send, a GetTask, a streamed send, a cancel of a long
task, an unknown task's error, a call without a token and a call to an
agent (tenant) that does not exist.
"""
import asyncio
import json
import sys

import grpc
import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.client.transports.grpc import GrpcTransport
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    TaskState,
)

BASE, TOKEN = sys.argv[1], sys.argv[2]


def with_bearer(details, token):
    metadata = list(details.metadata or []) + [("authorization", f"Bearer {token}")]
    return details._replace(metadata=metadata)


# (grpc.aio files an interceptor under its first matching kind only: one object per kind)
class BearerUnary(grpc.aio.UnaryUnaryClientInterceptor):
    """Adds `authorization: Bearer TOKEN` to unary calls."""

    def __init__(self, token):
        self.token = token

    async def intercept_unary_unary(self, continuation, details, request):
        return await continuation(with_bearer(details, self.token), request)


class BearerStream(grpc.aio.UnaryStreamClientInterceptor):
    """Adds `authorization: Bearer TOKEN` to server-streaming calls."""

    def __init__(self, token):
        self.token = token

    async def intercept_unary_stream(self, continuation, details, request):
        return await continuation(with_bearer(details, self.token), request)


addresses = []


def channels(token):
    def make(url):
        addresses.append(url)
        interceptors = [BearerUnary(token), BearerStream(token)] if token else []
        return grpc.aio.insecure_channel(url, interceptors=interceptors)

    return make


def message(message_id, text):
    return Message(role=Role.ROLE_USER, message_id=message_id, parts=[Part(text=text)])


def texts(parts):
    return [p.text for p in parts if p.HasField("text")]


async def client(http, slug, streaming, token=TOKEN, card=None):
    config = ClientConfig(
        streaming=streaming,
        httpx_client=http,
        supported_protocol_bindings=["GRPC"],
        grpc_channel_factory=channels(token),
    )
    factory = ClientFactory(config)
    if card is not None:
        return factory.create(card)
    return await factory.create_from_url(f"{BASE}/a2a/{slug}")


def error_of(e):
    return {"type": type(e).__name__, "message": str(e)}


async def run(http):
    out = {}
    plain = await client(http, "tag-ai", False)
    card = plain._card
    grpc_interfaces = [i for i in card.supported_interfaces if i.protocol_binding == "GRPC"]
    out["interface"] = {
        "url": grpc_interfaces[0].url,
        "tenant": grpc_interfaces[0].tenant,
        "chosen": addresses[-1],
        "transport": type(getattr(plain._transport, "_base", plain._transport)).__name__,
    }
    sent = [e async for e in plain.send_message(SendMessageRequest(message=message("grpc-1", "2025-10-01 Starbucks 4.50")))]
    task = sent[-1].task
    out["send_state"] = TaskState.Name(task.status.state)
    out["send_artifacts"] = [t for a in task.artifacts for t in texts(a.parts)]
    got = await plain.get_task(GetTaskRequest(id=task.id))
    out["get_same_id"] = got.id == task.id
    out["get_state"] = TaskState.Name(got.status.state)

    streaming = await client(http, "tag-ai", True)
    kinds, states = [], []
    async for ev in streaming.send_message(SendMessageRequest(message=message("grpc-2", "2025-10-02 Uber 12.00"))):
        kind = ev.WhichOneof("payload")
        kinds.append(kind)
        if kind == "status_update":
            states.append(TaskState.Name(ev.status_update.status.state))
    out["stream_kinds"] = kinds
    out["stream_states"] = states

    slow = await client(http, "a2a-conformance", False)
    req = SendMessageRequest(
        message=message("test-resubscribe-message-id-grpc", "take your time"),
        configuration=SendMessageConfiguration(return_immediately=True),
    )
    started = [e async for e in slow.send_message(req)][-1].task
    out["started_state"] = TaskState.Name(started.status.state)
    cancelled = await slow.cancel_task(CancelTaskRequest(id=started.id))
    out["cancel_state"] = TaskState.Name(cancelled.status.state)
    try:
        await plain.get_task(GetTaskRequest(id="no-such-task"))
        out["missing"] = None
    except Exception as e:  # the SDK raises the A2A error it maps from the ErrorInfo
        out["missing"] = error_of(e)

    anonymous = await client(http, "tag-ai", False, token=None)
    try:
        await anonymous.get_task(GetTaskRequest(id=task.id))
        out["no_token"] = None
    except Exception as e:
        out["no_token"] = error_of(e)

    wrong = type(card)()
    wrong.CopyFrom(card)
    for i in wrong.supported_interfaces:
        i.tenant = "no-such-agent"
    nobody = await client(http, None, False, card=wrong)
    try:
        await nobody.get_task(GetTaskRequest(id=task.id))
        out["bad_tenant"] = None
    except Exception as e:
        out["bad_tenant"] = error_of(e)
    for c in (plain, streaming, slow, anonymous, nobody):
        await c.close()
    return out


async def main():
    async with httpx.AsyncClient(timeout=30) as http:
        print(json.dumps(await run(http)))


asyncio.run(main())
