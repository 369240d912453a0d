"""Seed 003's MNIST CNN (Conv 32-64-64, 3x3, max-pool, Dense 64, Dense 10, Adam) on the shipped
digits: training steps timed, then time to 95% held-out accuracy from a fresh model (see mlp.py)."""
from __future__ import annotations

from accelbench.workloads.dl import models
from accelbench.workloads.dl.mlp import DigitsClassifier


class CNN(DigitsClassifier):
    name = "cnn"
    description = "the deep-learning GPU guide's Keras MNIST CNN (Conv 32-64-64, Dense 64-10, Adam): train steps, time to 95%"
    model_name = "cnn"
    image_input = True
    default_batch = 128   # seed 003 gives none; the MLP's, so the two compare step for step
    epochs = 10           # the CNN passes 95% within a few epochs; ten bound a full run on a CPU

    def build(self):
        return models.build_cnn()

    def optimizer(self, parameters):
        import torch

        return torch.optim.Adam(parameters, lr=self.learning_rate, eps=1e-7)  # Keras's epsilon
