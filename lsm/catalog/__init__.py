"""lsm.catalog"""
