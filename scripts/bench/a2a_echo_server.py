"""The peer for scripts/bench.sh: the smallest echo agent the official
a2a-sdk server makes (its hello-world shape: the executor answers with one
agent message, no task store traffic beyond the SDK's own), under uvicorn.

python3 a2a_echo_server.py PORT   serves JSON-RPC on http://127.0.0.1:PORT/
"""

import sys

import uvicorn
from starlette.applications import Starlette

from a2a.helpers import get_message_text, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill

PORT = int(sys.argv[1])
URL = f"http://127.0.0.1:{PORT}"


class Echo(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = get_message_text(context.message)
        await event_queue.enqueue_event(new_text_message(f"echo: {text}", context_id=context.context_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


card = AgentCard(
    name="echo",
    description="Echoes its input",
    supported_interfaces=[AgentInterface(url=URL, protocol_binding="JSONRPC", protocol_version="1.0")],
    version="1.0.0",
    capabilities=AgentCapabilities(streaming=False),
    default_input_modes=["text/plain"],
    default_output_modes=["text/plain"],
    skills=[AgentSkill(id="echo", name="echo", description="echoes text", tags=["echo"])],
)
handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card)
routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url="/")
uvicorn.run(Starlette(routes=routes), host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
