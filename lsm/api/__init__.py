"""lsm.api"""
