from tests.orders.fixtures import client, network, network_url

__all__ = ["client", "network", "network_url"]
