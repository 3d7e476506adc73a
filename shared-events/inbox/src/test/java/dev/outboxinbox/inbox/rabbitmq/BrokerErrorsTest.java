package dev.outboxinbox.inbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.ShutdownSignalException;
import com.rabbitmq.client.impl.AMQImpl;
import java.io.IOException;
import java.net.ConnectException;
import org.junit.jupiter.api.Test;

/** Readiness carries what the broker said, not the empty IOException the client wraps it in. */
class BrokerErrorsTest {

    @Test
    void aRefusedDeclarationReadsAsTheBrokersCodeAndWords() {
        IOException refused = new IOException();
        refused.initCause(new ShutdownSignalException(false, false, new AMQImpl.Channel.Close(406,
                "PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue 'q' in vhost '/'", 50, 10), null));
        assertThat(BrokerErrors.describe(refused))
                .isEqualTo("406 PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue 'q' in vhost '/'");
    }

    @Test
    void whatWrappedTheRefusalIsKeptInFront() {
        IOException plugin = new IOException("cannot declare the partitions' exchange q (x-consistent-hash)",
                new ShutdownSignalException(true, false, new AMQImpl.Connection.Close(503,
                        "COMMAND_INVALID - invalid exchange type 'x-consistent-hash'", 40, 10), null));
        assertThat(BrokerErrors.describe(plugin)).isEqualTo("cannot declare the partitions' exchange q (x-consistent-hash): "
                + "503 COMMAND_INVALID - invalid exchange type 'x-consistent-hash' (the connection was closed)");
    }

    @Test
    void aBrokerThatIsDownReadsAsTheNetworkSaysIt() {
        assertThat(BrokerErrors.describe(new ConnectException("Connection refused"))).isEqualTo("Connection refused");
        assertThat(BrokerErrors.describe(new IOException())).isEqualTo("java.io.IOException");
    }
}
