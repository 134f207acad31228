"""Long actions of the app (Explore generation, live steering, tracing a feature) on worker threads.

The page script only submits the action and returns, so the page stays responsive and switching to
another page never waits for a model; a small fragment polls twice a second and shows a spinner
with the elapsed time until the result is in, then the page renders it. Actions on one model take
that model's lock (two actions at once would mix their hooks on the shared model object).

Example (in a page):
    if st.button("Generate"):
        background.start("explore", generate, model, prompt)
    background.show("explore", "generating", render=lambda result: st.write(result))
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import streamlit as st

POLL_S = 0.5


@st.cache_resource(show_spinner=False)
def _executor() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="thinklens-app")


@st.cache_resource(show_spinner=False)
def _locks() -> dict[str, threading.Lock]:
    return {}


_LOCKS_GUARD = threading.Lock()


def model_lock(name: str) -> threading.Lock:
    """The lock of the model loaded under ``name`` (shared by every session of this app process)."""
    with _LOCKS_GUARD:
        return _locks().setdefault(str(name), threading.Lock())


def _slot(key: str) -> str:
    return f"background-{key}"


def start(key: str, fn: Callable[..., Any], *args: Any, lock: str | None = None, **kwargs: Any) -> Future:
    """Run ``fn(*args, **kwargs)`` on a worker (under ``model_lock(lock)`` when given); kept under ``key``."""
    def call() -> Any:
        if lock is None:
            return fn(*args, **kwargs)
        with model_lock(lock):
            return fn(*args, **kwargs)

    future = _executor().submit(call)
    st.session_state[_slot(key)] = {"future": future, "started": time.time()}
    return future


def pending(key: str) -> bool:
    """True while the action under ``key`` is still running."""
    task = st.session_state.get(_slot(key))
    return bool(task) and not task["future"].done()


def forget(key: str) -> None:
    """Drop the action under ``key`` (its result is no longer shown)."""
    st.session_state.pop(_slot(key), None)


def wait(key: str, timeout: float = 120.0) -> None:
    """Block until the action under ``key`` is done (tests; a page never waits)."""
    task = st.session_state.get(_slot(key))
    if task:
        task["future"].exception(timeout=timeout)


@st.fragment(run_every=POLL_S)
def _poll(key: str, label: str) -> None:
    task = st.session_state.get(_slot(key))
    if task is None or task["future"].done():
        st.rerun()  # the whole page: it renders the result
    st.status(f"{label} ({time.time() - task['started']:.0f} s; other pages stay usable)", state="running")


def show(key: str, label: str, render: Callable[[Any], None], on_error: Callable[[str], None] | None = None) -> None:
    """Nothing before ``start``; a spinner while running; ``render(result)`` when done; an error card on failure."""
    task = st.session_state.get(_slot(key))
    if task is None:
        return
    future: Future = task["future"]
    if not future.done():
        _poll(key, label)
        return
    exc = future.exception()
    if exc is not None:
        message = f"{type(exc).__name__}: {exc}"
        if on_error is not None:
            on_error(message)
        else:
            st.error(f"**{label} failed**\n\n{message}")
        return
    render(future.result())
