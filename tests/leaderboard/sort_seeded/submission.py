import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    values, output = data
    output.copy_(torch.sort(values)[0])
    return output
