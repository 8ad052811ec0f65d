"""A loadable model module: ``examples/router_port`` plus the partial selectors of the tests."""

from tests.compiler.partial_selectors import router_port_model

model = router_port_model()
