"""Traffic and scenario model: static flows, Poisson or trace-driven classes, flow-size laws, packet-size profiles, presets."""

from mrfq.flows.errors import MrfqError, ScenarioError
from mrfq.flows.scenario import (
    ClassSpec,
    FlowSpec,
    PacketSizes,
    RouterConfig,
    RunConfig,
    Scenario,
    from_dict,
    load_preset,
    load_scenario,
    preset_description,
    preset_names,
    to_dict,
)
from mrfq.flows.traffic import ArrivalStream, PacketLaw, PacketStream, SizeLaw

__all__ = [
    "ArrivalStream", "PacketLaw", "PacketStream", "SizeLaw", "ClassSpec", "FlowSpec", "MrfqError", "PacketSizes", "RouterConfig", "RunConfig", "Scenario",
    "ScenarioError", "from_dict", "load_preset", "load_scenario", "preset_description",
    "preset_names", "to_dict",
]
