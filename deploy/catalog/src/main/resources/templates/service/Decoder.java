package {{package}};

import dev.outboxinbox.events.Event;
import dev.outboxinbox.inbox.contract.ContractDecoder;
import jakarta.inject.Singleton;

/**
 * {{name}}'s half of the door: what it consumes ({{routing-keys}}) checked against the contract
 * (type, version, JSON Schema, event id = message id). Narrow {@code Event} to the events' own family
 * (an {@code OrderEvent}, say) once the handler wants their fields.
 */
@Singleton
class {{Stem}}EventDecoder extends ContractDecoder<Event> {

    {{Stem}}EventDecoder() {
        super(Event.class);
    }
}
