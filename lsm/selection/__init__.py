"""lsm.selection"""
