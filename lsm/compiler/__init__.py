"""lsm.compiler"""
