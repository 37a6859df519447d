# Not a submission: defines neither custom_kernel nor ModelNew.
def kernel(data):
    return data[-1]
