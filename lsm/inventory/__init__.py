"""lsm.inventory"""
