"""The bundled handlers: the resource types every environment can deploy without writing one."""
