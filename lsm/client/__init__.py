"""lsm.client"""
