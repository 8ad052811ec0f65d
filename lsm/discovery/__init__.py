"""lsm.discovery"""
