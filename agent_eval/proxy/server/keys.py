"""Typed keys for the state the proxy's application holds."""

from __future__ import annotations

import aiohttp
from aiohttp import web

from agent_eval.proxy.capture.call import Call
from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.fleet.health import HealthChecker
from agent_eval.proxy.fleet.pool import WorkerPool
from agent_eval.proxy.fleet.queues import QueueReadings
from agent_eval.proxy.forward import Forwarder
from agent_eval.proxy.responses.route import ResponsesRoute
from agent_eval.proxy.server.group import Group
from agent_eval.proxy.server.metrics import ProxyMetrics
from agent_eval.proxy.server.request_bounds import NestingBound

CONFIG = web.AppKey("config", ProxyConfig)
POOL = web.AppKey("pool", WorkerPool)
METRICS = web.AppKey("metrics", ProxyMetrics)
FORWARDER = web.AppKey("forwarder", Forwarder)
HEALTH = web.AppKey("health", HealthChecker)
RESPONSES = web.AppKey("responses", ResponsesRoute)
SESSION = web.AppKey("session", aiohttp.ClientSession)
NESTING = web.AppKey("nesting", NestingBound)
QUEUES = web.AppKey("queues", QueueReadings)
GROUP = web.AppKey("group", Group)
"""Set in a proxy of several processes only: this process's place among them."""
CALL = web.RequestKey("call", Call)
"""On a request sent with an attempt key: the call of that attempt it is."""
