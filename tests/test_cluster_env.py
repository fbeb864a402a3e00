"""What a process joining a cluster by address gets in its environment (cobalt.serve.cluster.join_env):
a loopback address (a private head, a LocalCluster) also needs RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0,
else ray.init replaces 127.0.0.1 by the machine's address and cannot reach the head. No Ray here."""

from __future__ import annotations

import os

import pytest

from cobalt.serve.cluster import SINGLE_NODE_LOOPBACK, is_loopback_address, join_env, ray_cluster

(SWITCH,) = SINGLE_NODE_LOOPBACK


@pytest.fixture(autouse=True)
def no_switch(monkeypatch, tmp_path):
    monkeypatch.delenv(SWITCH, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.ray/auth_token of the user's


@pytest.mark.parametrize(
    "address", ["127.0.0.1:6379", "localhost:6379", "127.0.1.1:6379", "ray://127.0.0.1:10001", "[::1]:6379"]
)
def test_a_loopback_address_joins_on_loopback(address):
    assert is_loopback_address(address)
    assert join_env(address) == {"RAY_ADDRESS": address, **SINGLE_NODE_LOOPBACK}


@pytest.mark.parametrize("address", ["10.0.0.5:6379", "head-node:6379", "ray://192.168.1.2:10001"])
def test_another_address_keeps_rays_own_behaviour(address):
    assert not is_loopback_address(address)
    assert join_env(address) == {"RAY_ADDRESS": address}


def test_the_users_own_setting_wins(monkeypatch):
    monkeypatch.setenv(SWITCH, "1")
    assert SWITCH not in join_env("127.0.0.1:6379")
    with ray_cluster("127.0.0.1:6379", log=lambda message: None):
        assert os.environ[SWITCH] == "1"


def test_joining_exports_the_switch_for_the_block_only():
    with ray_cluster("127.0.0.1:6379", log=lambda message: None) as address:
        assert address == os.environ["RAY_ADDRESS"] == "127.0.0.1:6379"
        assert os.environ[SWITCH] == "0"
    assert SWITCH not in os.environ
