package dev.outboxinbox.inventory.inbox;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/**
 * The inbox is the reusable half of the consumer: it must not know the business it serves nor the
 * events of this system, so that it can become a library a second consumer uses as it is. The
 * business plugs in through {@link BatchEffects}; the payload stays a type parameter.
 */
class InboxArchitectureTest {

    private static final JavaClasses MAIN = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("dev.outboxinbox");

    @Test
    void theInboxKnowsNoDomainClass() {
        noClasses().that().resideInAPackage("dev.outboxinbox.inventory.inbox..")
                .should().dependOnClassesThat().resideInAnyPackage(
                        "dev.outboxinbox.inventory.stock..", "dev.outboxinbox.inventory.messaging..")
                .because("the business plugs in through BatchEffects, the transport calls the inbox, never the other way")
                .check(MAIN);
    }

    @Test
    void theInboxKnowsNoEventOfThisSystem() {
        noClasses().that().resideInAPackage("dev.outboxinbox.inventory.inbox..")
                .should().dependOnClassesThat().resideInAPackage("dev.outboxinbox.events..")
                .because("the payload is the consumer's type parameter; the contract module belongs to the business")
                .check(MAIN);
    }
}
